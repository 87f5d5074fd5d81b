#pragma once
// Which config a benchmark runs: the replayed one (REPLAY_FROM), the cache's, or the winner of a
// sweep run now and stored.

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "context/choice_log.hpp"
#include "context/run_context.hpp"
#include "plan/family.hpp"
#include "timing/op_timing.hpp"

namespace tunebench {

/// The cache key of `op` on `shape` in this run: its kernel version and tuning key, the device
/// (the CPU for host ops), the toolkit ("host" for host ops) and the timing mode ("host" for
/// host ops, timing_name of context.timing_mode and context.cold_l2 for GPU ops).
cache::Key cache_key(const Op& op, const Shape& shape, const RunContext& context);

/// The cache key of `op` on `shape` with half its M: what the race prunes `shape`'s key by
/// (TuneOptions::prune_factor). nullopt when pruning is off (context.tune.prune_factor 0) or M is
/// odd or 1.
std::optional<cache::Key> half_m_key(const Op& op, const Shape& shape, const RunContext& context);

/// The pruning group of `family`: its op's name and its tuning key without the M=... part
/// (e.g. "mxfp4_gemm N=4096,K=4096,"), so the keys a key prunes by (half_m_key) and is pruned by
/// are of its group; an op whose key has no M groups each shape alone.
std::string pruning_group(const Family& family);

/// The config the cache holds for `family` in this run, if it answers the key: a best config of
/// the op's own spaces that can_implement accepts and, when context.tune.space is the expanded
/// space (USE_FLAGTUNE=1), a measurement for every other expanded config that fits (so a best
/// left by a plain sweep does not answer an exhaustive one). Nothing without a cache. When the
/// cached best is not a config this op can run, says so in `unusable` (if given). Throws
/// cache::SqliteError when the cache cannot be read.
std::optional<Config> cached_config(const Family& family, const RunContext& context, std::string* unusable = nullptr);

/// The stored time of one run (p50, ns) of the config `family` will be timed with, where the
/// run can tell it before timing: the cache's measurement of the replayed config (REPLAY_FROM),
/// else of the cached best (cached_config). Nothing without a cache, for a key the cache cannot
/// answer yet (it is tuned in the loop), for a replayed family falling back to live tuning, for
/// a config without an ok measurement, or for a measurement taken elsewhere (a GPU op's on
/// another card by UUID, a host op's on another host by name: an import). Throws
/// cache::SqliteError when the cache cannot be read.
std::optional<std::int64_t> stored_run_ns(const Family& family, const RunContext& context, const ChoiceLog& choices);

/// The config `family` will be timed with: the cache's, else tuned now (a sweep timed as the
/// benchmark would time it, stored in the cache). `options` replaces context.tune when given.
/// Throws std::runtime_error when no config runs (or CUDA left a sticky error), and, before
/// any sweep, when the key needs tuning and context.cache is read-only (its result could not
/// be stored). When a sweep ran and `stats` is given, its SweepStats are copied there (left as
/// they are when the cache answered). `choices` as choose_config.
Config ensure_tuned(const Family& family, const RunContext& context, ChoiceLog& choices,
                    const TuneOptions* options = nullptr, SweepStats* stats = nullptr);

/// A replayed config the op cannot run (not in its spaces, or can_implement refuses it): it is
/// never run; the key is tuned live (replay_fallback).
struct UnrunnableReplay : std::runtime_error {
  UnrunnableReplay(std::string config_text, const std::string& why)
      : std::runtime_error(why), config(std::move(config_text)) {}
  std::string config;  ///< the replayed config's text
};

/// A replayed config a run would not run (unrunnable_replays).
struct UnrunnableReplayEntry {
  const Family* family = nullptr;
  /// "<family name>: '<config>' <why>", control characters escaped, the config cut at 80
  /// characters and the reason at 160 ("..." where cut): one line.
  std::string line;
};

/// For --tunebench_check=1: the replayed configs (context.replay, REPLAY_FROM) of the `selected`
/// families that a run would not run but tune live instead (replay_fallback): not parsable, in
/// neither of the op's spaces, or refused by can_implement for the shape. A GPU op's families are
/// left out where no device is (a run does not run them at all).
std::vector<UnrunnableReplayEntry> unrunnable_replays(const std::vector<const Family*>& selected,
                                                      const RunContext& context);

/// The replayed config of `family` (unless `options` is given), else the cached best of its
/// key, else the winner of a sweep timed with `time_run` and stored; and where it came from.
/// `options` replaces context.tune and skips replay and cache (re-timing contenders, live
/// tuning after a failed replay). Throws UnrunnableReplay for a replayed config the op cannot
/// run, StickyCudaError when a config left a sticky CUDA error (what was learnt is stored),
/// std::runtime_error when no config ran or the key cannot be stored (read-only cache). A
/// cache still locked by another process after the store's retries does not fail the choice:
/// the winner is kept in `choices` for the run (ChoiceLog::keep_unstored), with one line on
/// stderr; a replayed config that fell back, or a winner kept so, is what `choices` answers.
/// `stats` as ensure_tuned. `run_variants`: the workload's run variants (OpTiming::variants()),
/// given to the sweep as TuneOptions::run_variants.
std::pair<Config, ConfigSource> choose_config(const Family& family, const RunContext& context, ChoiceLog& choices,
                                              const RunTimer& time_run, const TuneOptions* options = nullptr,
                                              SweepStats* stats = nullptr, std::size_t run_variants = 1);

/// A replayed config `bad` that the op cannot run, or that failed (`what` says how, e.g.
/// "failed (...)"): evicted from the cache (marker compile_<op>_evicted, or compile_<op>_no_evict
/// when the eviction fails), then the key is tuned live without reading the cache, so a failed
/// eviction cannot hand the bad config back. Says so in one line on stderr and records the
/// fallback in `choices` (ChoiceLog::add_fallback). Returns the live-tuned config; throws as
/// choose_config. `time_run` times the live tuning's runs (null: timing.run_timer()), so a caller
/// can count them.
Config replay_fallback(const Family& family, const RunContext& context, ChoiceLog& choices, OpTiming& timing,
                       const std::string& bad, const std::string& what, const RunTimer* time_run = nullptr);

/// The timing options of this run (mode, cold L2).
TimingOptions timing_options(const RunContext& context);
/// The faults tests inject into this run's timed runs (TUNEBENCH_FAULT_INJECT).
TimingFaults timing_faults(const RunContext& context);

}  // namespace tunebench
