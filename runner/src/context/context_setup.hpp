#pragma once
// Making the run's facts (run_context.hpp): the measurement device, the timing actually used,
// the cache, and a replay's recorded configs.

#include <memory>

#include "context/run_context.hpp"
#include "tunebench/device.hpp"
#include "tunebench/op.hpp"

namespace tunebench {

/// The context of a run with `settings` on the machine `gpu` describes. Selects device 0 and
/// reads its properties when there is one; falls back to event timing (one line on stderr)
/// when CUPTI cannot be used; opens the cache (settings.cache, else cache::default_cache_path())
/// unless `listing`. Throws CudaError, cache::SqliteError, and std::invalid_argument for an
/// empty TUNEBENCH_CACHE.
std::shared_ptr<RunContext> make_context(const Settings& settings, const GpuProbe& gpu, const OpList& ops,
                                         bool listing);

/// REPLAY_FROM: reads `dir`'s configs.json into context.replay. Throws ReplayError when a config
/// was recorded with another kernel version or on another device (a replay must run the same
/// kernels on the same device), `dir` is missing or not a folder (naming `dir`), its
/// configs.json or manifest.json is not a regular file (a FIFO is never waited on), or the
/// directory is not a run record; and when its manifest.json
/// says the run did not complete, or names another device or timing mode. Warns (one line on
/// stderr) of another tunebench version or git revision, and of a missing manifest.json.
void load_replay(const std::filesystem::path& dir, const OpList& ops, RunContext& context);

}  // namespace tunebench
