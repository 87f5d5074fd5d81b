#pragma once
// The autotuner: times an op's configs for one tuning key and picks the winner.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "timing/run_timer.hpp"
#include "tunebench/cache/config_cache.hpp"
#include "tunebench/op.hpp"

namespace tunebench {

class SweepStrategy;

/// How a sweep runs. Plain autotune (the default space) is the common case; USE_FLAGTUNE=1
/// selects the expanded space for an exhaustive search.
struct TuneOptions {
  SpaceKind space = SpaceKind::kDefault;
  int warmup = 1;            ///< untimed runs before each config's repetitions
  int min_repetitions = 3;   ///< timed runs per config, at least
  int max_repetitions = 15;  ///< and at most; between them, as many as fit budget_per_config
  std::chrono::nanoseconds budget_per_config = std::chrono::milliseconds(100);
  /// A config whose runs (warmup included) exceed this is stopped between runs and recorded as
  /// status timeout. A kernel that never returns cannot be stopped in-process.
  std::chrono::nanoseconds timeout_per_config = std::chrono::seconds(20);
  /// Configs whose p50 is within this fraction of the fastest p50 tie; the earliest in the
  /// op's config order wins, so a rerun under the same noise picks the same config. The cache
  /// settles a key's stored best by the same band (ConfigCache::kTieTolerance).
  double tie_tolerance = cache::ConfigCache::kTieTolerance;
  /// When not empty, only these configs are timed (to re-time the finalists of a key), in the
  /// op's config order (options.space first, then the expanded space), whatever order they are
  /// given in: the tie rule's "earliest" is the op's order.
  std::vector<Config> only;
  /// Finalists (finalists_of): every ok config whose p20 is within this fraction of the
  /// fastest's p80, and at least min_finalists of the fastest.
  double finalist_band = 0.02;
  int min_finalists = 3;
  /// The race (RaceSweep): after one screening run per config (and a warmup while the key's
  /// runs are short), a config whose fastest run exceeds screen_drop x the fastest config's is
  /// dropped; the rest get
  /// race_runs more runs, interleaved, and a config whose p20 exceeds race_drop x the best's
  /// p80 is dropped too. Bounds from the in-process noise measured on an H200 (docs/perf-sweep.md).
  double screen_drop = 1.5;
  int race_runs = 3;
  double race_drop = 1.1;
  /// The workload's run variants (Workload::variants(): weight copies or routings, one per run in
  /// turn, whatever config runs). The race's interleaved passes are padded with untimed runs to a
  /// length with no common factor with it, so each config's timed runs step through every
  /// variant rather than keep the one their place in a pass gives them, and its final round
  /// times whole cycles of them where that adds at most a third to the repetitions.
  std::size_t run_variants = 1;
  /// Pruning (RaceSweep): a config that ran more than prune_factor x the best on prune_from, the
  /// op's key with half this key's M, is not screened here, nor one pruned there; it is recorded
  /// with status pruned. Only where prune_from_best_ns is at least 200 us (long kernels, whose
  /// runs vary by 2-3%, and whose screen is what a sweep of them costs), and never every config.
  /// On the expanded spaces of an H200 the winner of every MoE prefill key ran at most 1.94x the
  /// best on each smaller M of its shape (docs/perf-sweep.md, "Pruning from the key with half
  /// the M"); 0 turns it off.
  double prune_factor = 4;
  /// The measurements of the key with half the M (from the cache; empty: nothing to prune by)
  /// and its stored best's p50 (the winner of its final round; 0: none, nothing is pruned). The
  /// stored best, not the fastest row: a config the race dropped keeps the time of one or two
  /// runs, which a lucky run can put under the winner's.
  std::vector<cache::Measurement> prune_from;
  std::int64_t prune_from_best_ns = 0;
  /// What prune_from is called in a pruned config's error text, e.g. "M=2048".
  std::string prune_from_label;
  /// Host threads for Op::precompile before a sweep (0: one per hardware thread).
  int compile_threads = 0;
  /// False: another process compiles the sweep's configs into the kernel cache (a sweep's
  /// compile pool), so the autotuner does not precompile them; a config's first run waits for it
  /// through before_new_config (and compiles it itself when it is not there).
  bool precompile = true;
  /// Called with a config's text right before the first run of a config (after it the config
  /// is loaded, compiled if needed): where a worker fed by a compile pool waits for that config.
  /// May be empty.
  std::function<void(const std::string& config)> before_new_config;
  /// Called before the precompile ("precompiling N configs", compiling true) and before each
  /// config is timed (the config's text, compiling false), so a watchdog can tell a slow sweep
  /// from a hung one and name the config that hung. May be empty.
  std::function<void(const std::string& activity, bool compiling)> on_progress;
  /// How the configs are timed and the winner chosen (sweep_strategy.hpp); null: FullSweep.
  std::shared_ptr<const SweepStrategy> strategy;
};

/// What a sweep cost and left open, for the sweep's figures and the measurement GPU's re-timing.
struct SweepStats {
  std::int64_t runs = 0;       ///< runs launched and timed, warmups included
  std::int64_t kernel_ns = 0;  ///< the sum of their times: kernel time (host time for host ops)
  int dropped = 0;             ///< configs that ran but did not reach the final round
  int pruned = 0;              ///< configs not run: pruned by the key with half the M (prune_factor)
  /// Wall time of the sweep's own Op::precompile: compiling the configs no one compiled before
  /// (a sweep fed by a compile pool only reads them back from the kernel cache).
  std::int64_t compile_ns = 0;
  /// The configs of the final round (op's config order): what a parent re-times on the
  /// measurement GPU when this sweep ran on another. Empty when no config ran or one only could.
  std::vector<Config> finalists;
};

/// Outcome of a sweep.
struct TuneOutcome {
  Config best;  ///< empty when no config ran successfully
  std::int64_t best_p50_ns = 0;
  std::vector<cache::Measurement> results;  ///< every config timed or failed in this sweep
  int reused_failures = 0;                  ///< configs skipped because a stored result failed
  int rejected = 0;                         ///< configs can_implement rejected
  /// Set when a config left a sticky CUDA error (illegal address and the like): the sweep
  /// stopped there, that config is the last of results (launch_failed), and nothing else can
  /// run in this process. best is then empty.
  std::string fatal_error;
  SweepStats stats;
  bool found() const { return !best.empty(); }
};

/// A sweep ended by a sticky CUDA error: this process can run nothing more on its GPU.
class StickyCudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// `configs` in the op's config order: their positions in op.config_space(space), then those of
/// the other space, then any others as given.
std::vector<Config> in_config_order(const Op& op, SpaceKind space, std::vector<Config> configs);

/// Sweeps the op's configs (space from `options`) that can_implement `shape` on `device` (when
/// exactly one can, it is the winner untimed, best_p50_ns 0 and no results). Configs whose
/// stored result in `known` failed are skipped (a rerun does not retry them; one stored as
/// pruned is not a failure and runs again); the rest are
/// precompiled (Op::precompile) and handed to options.strategy (FullSweep when null), which times
/// them and picks the winner: with FullSweep, warmup runs then repetitions per config,
/// p20/p50/p80 of the repetitions, p50 the score; every config's outcome in results, failures
/// included: compile_failed (a CompileError), launch_failed (any other exception), timeout. A
/// CudaError that leaves the context unusable (sticky) ends the sweep: the config is recorded
/// and fatal_error set, so the caller can store what was learnt before giving up.
TuneOutcome autotune(const Op& op, const Shape& shape, const DeviceInfo& device, const RunTimer& time_run,
                     const TuneOptions& options, const std::vector<cache::Measurement>& known = {},
                     const std::string& device_uuid = "");

/// The nearest-rank q-quantile (0 <= q <= 1) of `samples` (not empty), in their unit.
std::int64_t quantile(std::vector<std::int64_t> samples, double q);

}  // namespace tunebench
