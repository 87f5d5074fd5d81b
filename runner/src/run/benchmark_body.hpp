#pragma once
// Registering a family as a Google Benchmark benchmark and the body Google Benchmark runs.

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "context/choice_log.hpp"
#include "context/run_context.hpp"
#include "context/run_record.hpp"
#include "plan/family.hpp"
#include "timing/op_timing.hpp"
#include "timing/stage_stats.hpp"

namespace tunebench {

/// The benchmark that ran last: its workload, timer and chosen config, kept while Google
/// Benchmark calls the same benchmark again (once per iteration-count probe and per
/// repetition), so inputs are prepared and the config chosen once per benchmark, not per
/// call. Only one is kept: the next benchmark frees it before preparing its own.
struct LastBenchmark {
  std::mutex mutex;                  ///< guards the members (benchmarks run on one thread)
  std::string name;                  ///< family name, "" when empty
  std::unique_ptr<OpTiming> timing;  ///< its workload, stream and timer
  Config config;                     ///< the config it is timed with
  std::string label;                 ///< the label its runs carry
  /// Frees the workload (call before CUDA shuts down: after RunSpecifiedBenchmarks).
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    timing.reset();
    name.clear();
  }
};

/// Keys tuned inside the timing loop (the in-process executor: a key is tuned right before its
/// benchmark's timing, outside the measured time): what that tuning cost.
struct LoopTuning {
  double seconds = 0;         ///< wall time of the config choices that tuned
  double kernel_seconds = 0;  ///< measured time of the runs they timed
  long long runs = 0;         ///< runs they timed
  /// kernel_seconds over seconds; 0 when nothing was tuned.
  double busy() const { return seconds > 0 ? kernel_seconds / seconds : 0; }
};

/// What the registered benchmarks write while Google Benchmark times them: owned by the run
/// (run/main.cpp), shared by every benchmark it registers, beside the run's const facts.
struct TimingLoopState {
  /// Replay fallbacks and winners the cache could not take (the sweep stage's too); never null.
  std::shared_ptr<ChoiceLog> choices = std::make_shared<ChoiceLog>();
  /// Every benchmark's config and its source (record mode); null: nothing recorded.
  std::shared_ptr<RunRecord> record;
  LastBenchmark last;
  TimingStageStats stats;  ///< every call's wall and measured time (stats.seconds: set by the run)
  LoopTuning tuning;       ///< keys tuned inside the loop
  /// Ops whose runs could not be graph-batched (OpTiming::batch_refused), each said once on stderr.
  std::set<std::string> eager_ops;
};

/// Registers `family` with benchmark::RegisterBenchmark: manual time in the op's time unit,
/// the config as the label (GPU ops: followed by the timing name in parentheses), counters
/// TFLOP/s and GB/s (over the mean iteration time), roofline% where the device's peaks are
/// known, and sm_mhz_start / sm_mhz_end (the SM clock before and after the timing loop, GPU
/// ops, where NVML can read it). Each call's wall time and measured time go to `loop`'s stats; an
/// op whose runs cannot be captured into a batch graph is said once on stderr. The
/// config is the cached best of the family's key; a key not in the cache is autotuned first,
/// outside the measured time, and the result stored (with a read-only cache it is not tuned:
/// the benchmark ends with an error naming the cache and the key). A family of a GPU op on a machine without
/// a GPU, a sweep in which no config ran, or any exception from the op ends that benchmark with
/// SkipWithError and a reason; an iteration time that is zero or not finite likewise. The body
/// reads `context` and writes `loop` (shared by the benchmarks of a run, one at a time).
/// `iterations`, when given, is the benchmark's explicit iteration count (Google Benchmark then
/// runs no probe rounds; its run names carry "/iterations:N", which tunebench's reporters drop).
void register_family(const Family& family, std::shared_ptr<const RunContext> context,
                     std::shared_ptr<TimingLoopState> loop,
                     std::optional<benchmark::IterationCount> iterations = std::nullopt);

}  // namespace tunebench
