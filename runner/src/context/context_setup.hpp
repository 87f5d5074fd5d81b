#pragma once
// Making the run's facts (run_context.hpp): the measurement device, the timing actually used,
// the cache, and a replay's recorded configs.

#include <memory>

#include "context/run_context.hpp"
#include "tunebench/device.hpp"
#include "tunebench/op.hpp"

namespace tunebench {

/// What make_context makes a context for, which decides how it opens the config cache.
enum class ContextFor {
  kRun,      ///< a run: the cache opened read-write (made when missing, a damaged one moved aside)
  kListing,  ///< --benchmark_list_tests, or an MPI rank whose child opens the cache: no cache
  /// --tunebench_check=1: nothing written. The cache is opened read-only when it is a file with
  /// contents (so a foreign file or one of a newer schema is refused as a run refuses it); one a
  /// run would make or start afresh (missing, empty, damaged: a run moves it aside) is left
  /// closed (context.cache null: every key counts as untuned), once its folder is found writable.
  kCheck,
};

/// The context of a run with `settings` on the machine `gpu` describes. Selects device 0 and
/// reads its properties when there is one; falls back to event timing (one line on stderr)
/// when CUPTI cannot be used (a run only); opens the cache (settings.cache, else
/// cache::default_cache_path()) as `for_what` says. Throws CudaError, cache::SqliteError, and
/// std::invalid_argument naming the cache when kCheck finds that a run could not make it.
std::shared_ptr<RunContext> make_context(const Settings& settings, const GpuProbe& gpu, const OpList& ops,
                                         ContextFor for_what);

/// Whether a run would find the existing cache file `path` read-only: this user cannot write the
/// file or its folder (where SQLite keeps the journal). For --tunebench_check=1, which opens it
/// read-only itself.
bool cache_read_only_for_a_run(const std::filesystem::path& path);

/// How the run's benchmarks are timed, as the manifest and the JSON context record it:
/// timing_name of context.timing_mode and cold_l2 when it times GPU ops (context.times_gpu_ops),
/// else "host", the name the host ops' cache keys give their timing.
std::string run_timing_name(const RunContext& context);

/// REPLAY_FROM: reads `dir`'s configs.json into context.replay. Throws ReplayError when a config
/// was recorded with another kernel version or on another device (a replay must run the same
/// kernels on the same device), `dir` is missing or not a folder (naming `dir`), its
/// configs.json or manifest.json is not a regular file (a FIFO is never waited on), or the
/// directory is not a run record; and when its manifest.json
/// says the run did not complete, or names another device, or (when this run times GPU ops)
/// another timing mode: a run of host ops alone times them on the host whatever the record's. Warns (one line on
/// stderr) of another tunebench version or git revision, and of a missing manifest.json.
void load_replay(const std::filesystem::path& dir, const OpList& ops, RunContext& context);

}  // namespace tunebench
