#pragma once
// Sweep strategies: how one key's configs are timed and its winner chosen. autotune() prepares
// the configs (can_implement, stored failures skipped, precompiled) and hands them to the
// strategy in TuneOptions::strategy. Every strategy times through batches (RunTimer: runs
// launched back to back, one collection per batch) and fills TuneOutcome::stats. Design and
// figures: docs/perf-sweep.md.

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/autotuner.hpp"

namespace tunebench {

/// How a key's configs are timed and the winner chosen.
class SweepStrategy {
 public:
  virtual ~SweepStrategy() = default;
  /// For messages and the JSON context: "full", "race", "final".
  virtual std::string name() const = 0;
  /// Times configs of `order` (the op's config order) with `time_run` and fills `out`: one
  /// cache::Measurement per config it timed or that failed (results, parallel to `order` up to
  /// where it stopped), the winner (best, best_p50_ns; left empty when none ran) and stats. A
  /// config's failure is data, stored in results; a CudaError that is sticky ends the sweep: the
  /// configs of the batch that raised it are recorded launch_failed (launches are asynchronous,
  /// so a batch of several configs cannot say which one failed), fatal_error is set, and the
  /// strategy returns. Calls options.on_progress(activity, false) before each batch: a config's
  /// text while one config runs, else a description. Must be safe to call from several threads
  /// on different keys.
  virtual void sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
                     const std::string& device_uuid, TuneOutcome& out) const = 0;
};

/// Every config to full repetitions, one config after the other (time_config), then
/// pick_winner: the sweep of tunebench's first releases (TUNEBENCH_SWEEP=full).
class FullSweep final : public SweepStrategy {
 public:
  std::string name() const override { return "full"; }
  void sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
             const std::string& device_uuid, TuneOutcome& out) const override;
};

/// A race (TUNEBENCH_SWEEP=race, the default), three rounds after pruning:
/// 0. prune: where options.prune_from is a key of long runs (its best at least 200 us), a config
///    that ran there more than options.prune_factor x its best, or was pruned there, is not run
///    (status pruned, the ratio in its error text), unless that would leave no config;
/// 1. screen: every config gets options.warmup + 1 runs in one batch; one whose fastest run
///    exceeds options.screen_drop x the fastest config's is dropped;
/// 2. race: the rest get options.race_runs more runs each, interleaved (round-robin, so a clock
///    that drifts during the key does not favour one config); one whose p20 exceeds
///    options.race_drop x the best's p80 is dropped;
/// 3. final: finalists_of every config measured ok get full repetitions (as time_config counts
///    them from the budget), interleaved; the winner is picked among them alone (pick_winner's
///    tie rule), from the final round's runs, which are also what results hold for them.
/// Configs that did not reach the final keep the quantiles of the runs they had.
class RaceSweep final : public SweepStrategy {
 public:
  std::string name() const override { return "race"; }
  void sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
             const std::string& device_uuid, TuneOutcome& out) const override;
};

/// The race's final round alone: every config of `order` is a finalist (options.warmup runs
/// each, at least one, whose last sets its repetitions; then full repetitions, interleaved). How the measurement GPU
/// re-times the finalists another GPU found (TuneOptions::only).
class FinalRound final : public SweepStrategy {
 public:
  std::string name() const override { return "final"; }
  void sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
             const std::string& device_uuid, TuneOutcome& out) const override;
};

/// The strategy of sweep_strategy_table() named `name` ("race", "full"); nullopt for a name the
/// table lacks (sweep_strategy() is the checked lookup, with its one-line error).
std::optional<std::shared_ptr<const SweepStrategy>> strategy_named(const std::string& name);

/// One config's measurement: options.warmup untimed runs and the first timed run in one batch,
/// then as many timed runs as fit options.budget_per_config judged from the first (between
/// min_ and max_repetitions), in batches of at most ~50 ms so a slow config is stopped between
/// them; status ok with p20/p50/p80 (nearest rank) of the timed runs, or timeout (past
/// timeout_per_config), compile_failed (CompileError), launch_failed (any other exception).
/// Adds its runs to `stats`. Rethrows a sticky CudaError after nothing else can run.
cache::Measurement time_config(const Config& config, const RunTimer& time_run, const TuneOptions& options,
                               const std::string& device_uuid, SweepStats* stats = nullptr);

/// The index of the winner among `results`: the earliest whose p50 is within `tie_tolerance`
/// of the fastest ok p50, so a rerun under the same noise picks the same config; nullopt when
/// none is ok.
std::optional<std::size_t> winner_index(const std::vector<cache::Measurement>& results, double tie_tolerance);

/// The winner of out.results (parallel to `order`) by winner_index. Leaves out.best empty when
/// no result is ok.
void pick_winner(const std::vector<Config>& order, const TuneOptions& options, TuneOutcome& out);

/// The finalists among `results` (parallel to `order`): every ok config whose p20 is within
/// options.finalist_band of the p80 of the fastest (by p50), so a noisier key has more, and at
/// least options.min_finalists of the fastest (fewer when fewer are ok); in `order`'s order.
std::vector<Config> finalists_of(const std::vector<Config>& order, const std::vector<cache::Measurement>& results,
                                 const TuneOptions& options);

/// Runs a batch through `time_run` and adds it to `stats` (when given): its runs and their summed
/// time. Throws what time_run throws.
std::vector<std::chrono::nanoseconds> run_batch(const RunTimer& time_run, const std::vector<Config>& runs,
                                                SweepStats* stats);

/// A batch of the sweep holds runs up to about this much estimated kernel time (ns): a config's
/// runs are then stopped by the per-config timeout between batches, and a slow kernel gains
/// nothing it needs from batching (the collection a batch saves is ~0.7 ms, against runs of
/// 50 ms and more).
constexpr std::int64_t kBatchNs = 50'000'000;

/// `message` on one line (newlines as spaces): how a failure's text is stored in the cache.
std::string one_line_error(std::string message);

/// What `e` is about: the cause a BatchRunError carries (recursively), else `e` itself.
std::exception_ptr root_cause(std::exception_ptr e);

/// Sets `m`'s status and one-line error from what a run threw (`e`, unwrapped by root_cause):
/// compile_failed for a CompileError, else launch_failed. Returns whether it was a sticky
/// CudaError (nothing more can run in this process).
bool record_failure(cache::Measurement& m, std::exception_ptr e);

/// Sets `m` ok with the p20/p50/p80 (nearest rank) of `samples` (not empty, ns).
void set_quantiles(cache::Measurement& m, const std::vector<std::int64_t>& samples);

/// How many timed runs a config of `run_ns` gets at full repetitions: options.budget_per_config
/// / run_ns, clamped to [min_repetitions, max_repetitions].
int full_repetitions(std::int64_t run_ns, const TuneOptions& options);

}  // namespace tunebench
