#pragma once
// Every flag and environment variable tunebench reads, declared once in one table (settings.cpp)
// with its flag, variable, parser, default and help, and parsed once at start into Settings.
// Nothing else in tunebench reads the environment: google/benchmark's BM_DEFINE_* / FromEnv
// pairs are the model.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "timing/timing_mode.hpp"
#include "tune/sweep_strategy_table.hpp"
#include "tunebench/cache/database.hpp"
#include "tunebench/op.hpp"

namespace tunebench {

/// TUNEBENCH_FAULT_INJECT, for tunebench's own tests: one fault per run.
struct FaultInjection {
  int abort_shard = -1;       ///< "abort-shard=I": shard I aborts after its first key
  int disagree_shard = -1;    ///< "disagree-shard=I": shard I reports a config it did not sweep
  std::string sticky_config;  ///< "sticky-config=C": config C fails like an illegal address
  std::string hang_config;    ///< "hang-config=C": config C never returns
  int kill_rank = -1;         ///< "kill-rank=R": MPI rank R kills itself (SIGKILL) once handed a key
  bool evict_fails = false;   ///< "evict-fails": evicting a failed replayed config fails
  /// "slow-compile=S": the sweep's compile pool announces each key S seconds late, as if its
  /// configs took that long to compile (a worker waits for it; the watchdog's clock waits too).
  int slow_compile_s = 0;
  /// "slowdown=F": the A/B method's positive control: every timed run takes F (a fraction,
  /// 0 < F <= 10) longer: a host op by a busy wait inside the timed window of F times the
  /// run's own time, a GPU op by its measured kernel (or event) time times 1 + F
  /// (TimingFaults::slowdown says why).
  double slowdown = 0;
};

/// Where a sweep runs when the parallel warmup is off (TUNEBENCH_ISOLATE_SWEEP).
enum class IsolateSweep {
  kAuto,    ///< a child process when a selected GPU key needs tuning, else in bench itself
  kAlways,  ///< always a child process
  kNever,   ///< always in bench itself
};

/// The parsed values of the settings table.
struct Settings {
  std::filesystem::path shapes;           ///< shape file or folder (TUNEBENCH_SHAPES / --tunebench_shapes)
  bool shapes_from_env = false;           ///< shapes came from TUNEBENCH_SHAPES (its errors name it)
  bool shapes_from_flag = false;          ///< shapes came from --tunebench_shapes (its errors name it)
  std::uint64_t seed = 0;                 ///< input seed
  std::filesystem::path cache;            ///< config cache file; empty: cache::default_cache_path()
  SpaceKind space = SpaceKind::kDefault;  ///< USE_FLAGTUNE
  TimingMode timing = TimingMode::kKernel;
  bool cold_l2 = false;
  TimingLoop timing_loop = TimingLoop::kGraph;           ///< TUNEBENCH_TIMING_LOOP
  IterationSizing iterations = IterationSizing::kSized;  ///< TUNEBENCH_ITERATIONS
  int warmup_gpus = 1;                                   ///< PARALLEL_WARMUP_GPUS (1: off)
  IsolateSweep isolate_sweep = IsolateSweep::kAuto;
  /// TUNEBENCH_SWEEP: the sweep strategy's name, a row of sweep_strategy_table().
  std::string sweep = default_sweep_strategy();
  double hang_timeout_s = 300;          ///< TUNEBENCH_HANG_TIMEOUT, seconds
  double prune_factor = 4;              ///< TUNEBENCH_PRUNE_FACTOR (TuneOptions::prune_factor; 0 off)
  std::filesystem::path runs = "runs";  ///< where run directories are made
  std::string runs_from;                ///< "--tunebench_runs" or "TUNEBENCH_RUNS" as given; "" the default
  std::filesystem::path replay_from;    ///< REPLAY_FROM ("" records afresh)
  std::filesystem::path kernel_cache;   ///< TUNEBENCH_KERNEL_CACHE ("" the default folder)
  /// CUDA_VISIBLE_DEVICES as set (checked: comma-separated device indices, GPU-/MIG- UUIDs); nothing
  /// when unset; "" hides every GPU, as CUDA reads it.
  std::optional<std::string> visible_devices;
  /// --tunebench_check=1: check what a run would check first, then exit without running anything.
  bool check_only = false;
  /// The first of TMPDIR, TMP, TEMP, TEMPDIR that is set and not empty, as "NAME", and its value;
  /// both empty for /tmp. Checked where scratch files are made (the sweep), not here.
  std::string tmp_var, tmp_dir;
  FaultInjection fault;
  /// The MPI launcher's variables that are set (OMPI_COMM_WORLD_SIZE, SLURM_PROCID, ...), name ->
  /// value, each a non-negative integer below 2^31 (sweep/mpi/mpi_session.hpp reads them).
  std::map<std::string, std::string> launcher;
  /// Internal: --tunebench_shard=I:FILE makes this process shard I of a sweep.
  int shard = -1;
  std::string shard_list;
};

/// What a variable set to the empty string means (README, "Flags and environment"). One rule:
/// empty is unset, for tunebench's own variables and every other that means nothing by an empty
/// value. A variable of another program that gives the empty value a meaning of its own is read
/// as that program reads it, since that program acts on it: the row's parser sees "".
enum class EmptyValue {
  kUnset,   ///< the default applies, the manifest does not record it, setting_env() answers nullptr
  kOwners,  ///< the owner's meaning: CUDA_VISIBLE_DEVICES= hides every GPU (CUDA), OMP_NUM_THREADS= is invalid
            ///< (libgomp)
};

/// One row of the settings table.
struct SettingSpec {
  std::string purpose;                    ///< README group: tuning, replay, timing, devices, paths, op, tests, ...
  std::string flag;                       ///< "--tunebench_seed", or "" when there is only a variable
  std::string flag_value;                 ///< what the flag takes, for help: "N", "kernel|cudagraph|event"
  std::string env;                        ///< "TUNEBENCH_SEED", or "" when there is only a flag
  std::string help;                       ///< one line (Markdown), as the README's table shows it
  std::string default_text;               ///< the default, as the README's table shows it
  EmptyValue empty = EmptyValue::kUnset;  ///< what an empty variable means; a flag's parser always sees ""
  bool documented = true;                 ///< a row of the README's table (internal and test switches are not)
  bool manifest = true;                   ///< the run's manifest.json records the variable when set
  /// Parses `value` into `out`; `source` names the flag or variable for errors. Throws
  /// std::invalid_argument "SOURCE='VALUE': expected ..." (one line). May be empty for
  /// variables that are only recorded.
  std::function<void(Settings& out, const std::string& value, const std::string& source)> parse;
};

/// The table: tunebench's own rows, then every switch ops declared (OpSwitch), in that order.
std::vector<SettingSpec> settings_table();

/// Removes the --tunebench_* flags from argv (argc adjusted) and parses them and every variable
/// of the table: a flag wins over its variable, which is then not read. `default_shapes` is the
/// shape path when neither is given. Throws std::invalid_argument with one line naming the flag
/// or variable and what was expected, for an unknown --tunebench_ flag (the message lists the
/// known ones) or a bad value.
Settings parse_settings(int* argc, char** argv, const std::filesystem::path& default_shapes);

/// The variables of manifest rows that are set (an empty one only where its row's EmptyValue is
/// kOwners), name -> value as given.
std::map<std::string, std::string> manifest_environment();

/// The README's "Flags and environment" table rows, one Markdown line each, generated from
/// the table's documented rows (the README is checked against it by a test).
std::vector<std::string> settings_markdown_rows();

/// TUNEBENCH_CACHE, XDG_CACHE_HOME and HOME as the cache library's default locations take them.
cache::CacheLocationEnv cache_location_env();

/// The config cache file a run with `settings` uses: settings.cache when set, else
/// cache::default_cache_path() of cache_location_env(). Throws what default_cache_path throws
/// when no location can be determined.
std::filesystem::path config_cache_file(const Settings& settings);

/// The folder of NVRTC-compiled kernels (for tunebench::set_kernel_cache_dir): `kernel_cache`
/// (TUNEBENCH_KERNEL_CACHE, Settings::kernel_cache) when not empty, else the kernels folder in
/// the user's cache folder; an empty path (compile every time) when no cache location can be
/// determined. Never throws.
std::filesystem::path kernel_cache_dir(const std::filesystem::path& kernel_cache) noexcept;

/// The value of a table variable (nullptr when unset, or empty where its row reads empty as unset).
/// Throws std::logic_error for a name that is not in the table, so no variable is read that the
/// table does not declare.
const char* setting_env(const std::string& name);

}  // namespace tunebench
