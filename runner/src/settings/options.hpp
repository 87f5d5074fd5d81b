#pragma once
// tunebench's own flags and environment variables, parsed once at start.

#include <cstdint>
#include <filesystem>
#include <string>

#include "tunebench/op.hpp"

namespace tunebench {

/// tunebench's own command-line flags and environment, read before Google Benchmark's.
struct Options {
  /// Shape file or folder: --tunebench_shapes=PATH, else $TUNEBENCH_SHAPES, else
  /// `default_shapes` given to run_benchmarks.
  std::filesystem::path shapes;
  /// Input seed: --tunebench_seed=N, else $TUNEBENCH_SEED, else 0.
  std::uint64_t seed = 0;
  /// Config cache file: --tunebench_cache=FILE, else cache::default_cache_path()
  /// ($TUNEBENCH_CACHE, then the XDG cache folder). Empty here means that default.
  std::filesystem::path cache;
  /// USE_FLAGTUNE=1: autotune over the expanded config space (exhaustive search).
  SpaceKind space = SpaceKind::kDefault;
  /// GPU timing: --tunebench_timing=kernel|cudagraph|event, else $TUNEBENCH_TIMING, else
  /// "kernel" (see TimingOptions in op_timing.hpp).
  std::string timing = "kernel";
  /// Flush L2 before every timed run: --tunebench_cold_l2=0|1, else $TUNEBENCH_COLD_L2, else 0.
  bool cold_l2 = false;
  /// PARALLEL_WARMUP_GPUS (1: off). See parallel_warmup.hpp.
  int warmup_gpus = 1;
  /// Without the parallel warmup, where the sweep runs: TUNEBENCH_ISOLATE_SWEEP=auto (-1, the
  /// default: in a child process when a selected GPU key needs tuning, so a sticky CUDA error
  /// cannot take this process's GPU; in-process otherwise), 1 (always a child process), 0
  /// (always in-process).
  int isolate_sweep = -1;
  /// Where run directories are made: --tunebench_runs=DIR, else $TUNEBENCH_RUNS, else "runs".
  std::filesystem::path runs = "runs";
  /// REPLAY_FROM: a run directory whose configs this run replays exactly ("" records afresh).
  std::filesystem::path replay_from;
  /// Internal: --tunebench_shard=I:FILE makes this process shard I of a parallel warmup.
  int shard = -1;
  std::string shard_list;
};

/// Removes the --tunebench_* flags from argv (argc adjusted) and reads them and the
/// TUNEBENCH_* environment into Options. Throws std::invalid_argument with one line naming the
/// flag or variable and what was expected, for an unknown --tunebench_ flag or a bad value.
Options parse_options(int* argc, char** argv, const std::filesystem::path& default_shapes);

}  // namespace tunebench
