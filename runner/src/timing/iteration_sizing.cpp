#include "timing/iteration_sizing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/c_numbers.hpp"

namespace benchmark {
// Defined by the library (BM_DEFINE_double in benchmark.cc, exported) but declared in no public
// header of 1.7.1; the value the library itself sizes iterations with.
extern double FLAGS_benchmark_min_time;
}  // namespace benchmark

namespace tunebench {

double gbench_min_time() { return benchmark::FLAGS_benchmark_min_time; }

benchmark::IterationCount sized_iterations(double min_time, double run_seconds) {
  if (!(std::isfinite(run_seconds) && run_seconds > 0)) {
    throw std::invalid_argument("a run time of " + c_number(run_seconds) + " s cannot size an iteration count");
  }
  if (!(std::isfinite(min_time) && min_time >= 0)) {
    throw std::invalid_argument("a min_time of " + c_number(min_time) + " s cannot size an iteration count");
  }
  constexpr double kSafetyMultiplier = 1.4;  // Google Benchmark 1.7.1's
  constexpr double kMaxIterations = 1e9;
  const double n = std::round(kSafetyMultiplier * min_time / run_seconds);
  return static_cast<benchmark::IterationCount>(std::clamp(n, 1.0, kMaxIterations));
}

std::vector<benchmark::BenchmarkReporter::Run> without_sized_iterations(
    std::vector<benchmark::BenchmarkReporter::Run> runs) {
  for (auto& run : runs) run.run_name.iterations.clear();
  return runs;
}

}  // namespace tunebench
