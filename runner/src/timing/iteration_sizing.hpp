#pragma once
// The iteration count Google Benchmark 1.7.1's probe rounds settle on, computed up front from a
// run's stored time, so the serial loop spends no time on probe rounds (docs/timing.md,
// "Iteration counts").

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace tunebench {

/// Google Benchmark's min_time in seconds as the library resolved it (--benchmark_min_time, else
/// the BENCHMARK_MIN_TIME environment variable, else 0.5). Valid after benchmark::Initialize.
double gbench_min_time();

/// The iteration count Google Benchmark 1.7.1 settles on for a benchmark whose iterations each
/// take `run_seconds` of (manual) time under `min_time` seconds: its probe rounds stop at the
/// first count whose time reaches min_time, and that count is predicted from the last round as
/// lround(1.4 x min_time / run_seconds) (BenchmarkRunner::PredictNumItersNeeded, kSafetyMultiplier
/// 1.4); clamped to [1, 1e9] (its kMaxIterations), so a min_time of 0 gives 1 iteration, as
/// its first round does. Throws std::invalid_argument when `run_seconds` is not positive and
/// finite or `min_time` is negative or not finite.
benchmark::IterationCount sized_iterations(double min_time, double run_seconds);

/// The run names Google Benchmark gives a benchmark registered with an explicit iteration count
/// carry "/iterations:N" (BenchmarkName::iterations); tunebench's sized counts are not the
/// user's choice, so its reporters drop that part: the names, and so compare.py's pairing and a
/// dashboard's series, stay those of a probed run. Returns `runs` with run_name.iterations
/// cleared.
std::vector<benchmark::BenchmarkReporter::Run> without_sized_iterations(
    std::vector<benchmark::BenchmarkReporter::Run> runs);

}  // namespace tunebench
