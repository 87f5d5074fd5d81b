#pragma once
// Sweep strategies: how one key's configs are timed and its winner chosen. autotune() prepares
// the configs (can_implement, stored failures skipped, precompiled) and hands them to the
// strategy in TuneOptions::strategy. A new strategy (racing, successive halving) is a new
// SweepStrategy in this folder.

#include <string>
#include <vector>

#include "tune/autotuner.hpp"

namespace tunebench {

/// How a key's configs are timed and the winner chosen.
class SweepStrategy {
 public:
  virtual ~SweepStrategy() = default;
  /// For messages: "full".
  virtual std::string name() const = 0;
  /// Times configs of `order` (the op's config order) with `time_run` and fills `out`: one
  /// cache::Measurement per config it timed or that failed (results), and the winner (best,
  /// best_p50_ns; left empty when none ran). A config's failure is data, stored in results; a
  /// CudaError that is sticky ends the sweep: that config is recorded launch_failed, fatal_error
  /// set, and the strategy returns. Calls options.on_progress(config text, false) before timing
  /// each config. Must be safe to call from several threads on different keys.
  virtual void sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
                     const std::string& device_uuid, TuneOutcome& out) const = 0;
};

/// Every config to full repetitions (time_config), then pick_winner: the sweep of tunebench's
/// first releases and the default.
class FullSweep final : public SweepStrategy {
 public:
  std::string name() const override { return "full"; }
  void sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
             const std::string& device_uuid, TuneOutcome& out) const override;
};

/// One config's measurement: options.warmup untimed runs, then as many timed runs as fit
/// options.budget_per_config judged from the first (between min_ and max_repetitions); status
/// ok with p20/p50/p80 (nearest rank) of the timed runs, or timeout (past timeout_per_config),
/// compile_failed (CompileError), launch_failed (any other exception). Rethrows a sticky
/// CudaError after nothing else can run.
cache::Measurement time_config(const Config& config, const RunTimer& time_run, const TuneOptions& options,
                               const std::string& device_uuid);

/// The winner of out.results (parallel to `order`): the earliest config whose p50 is within
/// options.tie_tolerance of the fastest p50, so a rerun under the same noise picks the same
/// config. Leaves out.best empty when no result is ok.
void pick_winner(const std::vector<Config>& order, const TuneOptions& options, TuneOutcome& out);

}  // namespace tunebench
