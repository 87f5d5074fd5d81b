#pragma once
// The timing stage's figures as bench reports them: a line on stderr, entries of the JSON
// context, and timing_stage.json in the run directory (docs/timing.md, "The timing stage's
// figures").

#include <filesystem>
#include <string>
#include <vector>

#include "common/context_entry.hpp"
#include "timing/stage_stats.hpp"

namespace tunebench {

/// tunebench_timing_seconds (the stage's wall), tunebench_timing_kernel_seconds (the measured
/// time of every timed run, iteration-count probes and repetitions included),
/// tunebench_timing_busy_fraction (the second over the first), tunebench_timing_runs and
/// tunebench_timing_sized_benchmarks (benchmarks whose iteration count was sized up front).
std::vector<ContextEntry> timing_context(const TimingStageStats& stats);

/// "bench: timing: 93.1 s kernel time in 101.2 s (92% busy; 3.1 s preparing workloads and choosing
/// configs), 120 benchmarks (118 with iteration counts sized from stored times), 6.2e+06 timed
/// runs\n".
std::string timing_summary(const TimingStageStats& stats);

/// "" when every sized benchmark's calls measured between `min_time` (Google Benchmark's own bar
/// for a reported round) and TimingStageStats::kOverrunFactor x min_time; else a line for those
/// above (how many, the longest) and one for those below (how many, the shortest), each naming
/// the setting that leaves the count to Google Benchmark.
std::string short_of_min_time_note(const TimingStageStats& stats, double min_time);

/// Writes `file` (atomically) as JSON: the stage's figures and, per benchmark in the order they
/// ran, name, seconds, prepare_seconds, setup_seconds (OpTiming::setup_seconds), kernel_seconds,
/// busy_fraction, runs and sized_iterations (the count given up front, null where Google
/// Benchmark probed). Throws std::runtime_error when it cannot be written.
void write_timing_stage(const std::filesystem::path& file, const TimingStageStats& stats);

}  // namespace tunebench
