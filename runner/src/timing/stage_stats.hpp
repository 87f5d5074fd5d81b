#pragma once
// What a stage that times runs spent: wall time against the measured time of its runs.

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace tunebench {

/// The figures of Google Benchmark's timing stage (docs/timing.md, "The timing stage's
/// figures"): every call Google Benchmark makes of every benchmark counts, the calls that size
/// the iteration count and the repetitions included.
struct TimingStageStats {
  /// One benchmark's share.
  struct Benchmark {
    std::string name;            ///< the family's name
    double seconds = 0;          ///< wall time of its calls (preparation and config choice included)
    double prepare_seconds = 0;  ///< of which preparing its workload and choosing its config
    double setup_seconds = 0;    ///< of which setting up the timed runs (OpTiming::setup_seconds)
    double kernel_seconds = 0;   ///< measured time of its timed runs (manual time it reported)
    double runs = 0;             ///< timed runs (iterations) of its calls
  };
  std::vector<Benchmark> benchmarks;  ///< in the order they first ran
  double seconds = 0;                 ///< wall time of the stage (RunSpecifiedBenchmarks)
  /// The iteration counts given up front (IterationSizing::kSized), by family name; a benchmark
  /// not in it was probed by Google Benchmark.
  std::unordered_map<std::string, long long> sized_iterations;
  /// Sized benchmarks a call of which measured less than min_time (their runs now shorter than
  /// the stored time they were sized from), by family name: each call's measured seconds.
  std::unordered_map<std::string, double> short_of_min_time;
  /// Sized benchmarks a call of which ran more than one iteration and measured more than
  /// kOverrunFactor x min_time (their runs now longer than the stored time), by family name: each
  /// call's measured seconds.
  std::unordered_map<std::string, double> over_min_time;
  /// How far past min_time a sized call may run before it is named: Google Benchmark's own
  /// rounds end near 1.4 x min_time.
  static constexpr double kOverrunFactor = 4;
  /// Adds one call of benchmark `name`: `wall_s` of wall (`prepare_s` of it preparing, `setup_s`
  /// setting up its timed runs), `measured_s` measured over `call_runs`.
  void add(const std::string& name, double wall_s, double prepare_s, double setup_s, double measured_s,
           double call_runs) {
    const auto [it, added] = index_.emplace(name, benchmarks.size());
    if (added) benchmarks.push_back({name, 0, 0, 0, 0, 0});
    auto& b = benchmarks[it->second];
    b.seconds += wall_s;
    b.prepare_seconds += prepare_s;
    b.setup_seconds += setup_s;
    b.kernel_seconds += measured_s;
    b.runs += call_runs;
  }
  /// Sums over the benchmarks.
  double kernel_seconds() const {
    double s = 0;
    for (const auto& b : benchmarks) s += b.kernel_seconds;
    return s;
  }
  double prepare_seconds() const {
    double s = 0;
    for (const auto& b : benchmarks) s += b.prepare_seconds;
    return s;
  }
  double setup_seconds() const {
    double s = 0;
    for (const auto& b : benchmarks) s += b.setup_seconds;
    return s;
  }
  double runs() const {
    double n = 0;
    for (const auto& b : benchmarks) n += b.runs;
    return n;
  }
  /// kernel_seconds() over `seconds`; 0 when no time passed.
  double busy() const { return seconds > 0 ? kernel_seconds() / seconds : 0; }

 private:
  std::unordered_map<std::string, std::size_t> index_;  // name -> position in benchmarks
};

}  // namespace tunebench
