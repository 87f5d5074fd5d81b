#include "report/timing_stage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "common/atomic_file.hpp"
#include "common/c_numbers.hpp"
#include "common/one_line.hpp"
#include "common/plural.hpp"

namespace tunebench {

std::vector<ContextEntry> timing_context(const TimingStageStats& stats) {
  return {{"tunebench_timing_seconds", c_number(stats.seconds)},
          {"tunebench_timing_kernel_seconds", c_number(stats.kernel_seconds())},
          {"tunebench_timing_busy_fraction", c_number(stats.busy())},
          {"tunebench_timing_runs", std::to_string(static_cast<long long>(stats.runs()))},
          {"tunebench_timing_sized_benchmarks", std::to_string(stats.sized_iterations.size())}};
}

std::string timing_summary(const TimingStageStats& stats) {
  char line[400];
  std::snprintf(line, sizeof line,
                "bench: timing: %.1f s kernel time in %.1f s (%.0f%% busy; %.1f s preparing workloads and choosing "
                "configs), %zu %s (%zu with iteration counts sized from stored times), %.3g timed runs\n",
                stats.kernel_seconds(), stats.seconds, 100 * stats.busy(), stats.prepare_seconds(),
                stats.benchmarks.size(), stats.benchmarks.size() == 1 ? "benchmark" : "benchmarks",
                stats.sized_iterations.size(), stats.runs());
  return line;
}

namespace {

// One line for the sized benchmarks `calls` (name -> a call's measured seconds) whose calls ran
// `how` ("more than 4 x", "less than") min_time: how many, the extreme one (the furthest from what
// its count was sized for) and why; "" when there are none.
std::string sized_note(const std::unordered_map<std::string, double>& calls, bool longest, const std::string& how,
                       const std::string& why, double min_time) {
  if (calls.empty()) return "";
  const auto by_seconds = [](const auto& a, const auto& b) { return a.second < b.second; };
  const auto extreme = longest ? std::max_element(calls.begin(), calls.end(), by_seconds)
                               : std::min_element(calls.begin(), calls.end(), by_seconds);
  char line[700];
  std::snprintf(line, sizeof line,
                "bench: %s ran %s --benchmark_min_time (%g s) of runs, their runs now %s than the stored times their "
                "iteration counts were sized from (%s: %.3g s); with --tunebench_iterations=probed Google Benchmark "
                "sizes them itself\n",
                count_of(static_cast<long long>(calls.size()), "sized benchmark", "sized benchmarks").c_str(),
                how.c_str(), min_time, why.c_str(), escape_controls(extreme->first).c_str(), extreme->second);
  return line;
}

}  // namespace

std::string short_of_min_time_note(const TimingStageStats& stats, double min_time) {
  char over[32];
  std::snprintf(over, sizeof over, "more than %g x", TimingStageStats::kOverrunFactor);
  return sized_note(stats.over_min_time, true, over, "longer", min_time) +
         sized_note(stats.short_of_min_time, false, "less than", "shorter", min_time);
}

void write_timing_stage(const std::filesystem::path& file, const TimingStageStats& stats) {
  nlohmann::json doc;
  doc["seconds"] = stats.seconds;
  doc["kernel_seconds"] = stats.kernel_seconds();
  doc["busy_fraction"] = stats.busy();
  doc["runs"] = stats.runs();
  doc["prepare_seconds"] = stats.prepare_seconds();
  doc["setup_seconds"] = stats.setup_seconds();
  auto& list = doc["benchmarks"] = nlohmann::json::array();
  for (const auto& b : stats.benchmarks) {
    const auto sized = stats.sized_iterations.find(b.name);
    list.push_back({{"name", b.name},
                    {"seconds", b.seconds},
                    {"prepare_seconds", b.prepare_seconds},
                    {"setup_seconds", b.setup_seconds},
                    {"kernel_seconds", b.kernel_seconds},
                    {"busy_fraction", b.seconds > 0 ? b.kernel_seconds / b.seconds : 0},
                    {"runs", b.runs},
                    {"sized_iterations",
                     sized == stats.sized_iterations.end() ? nlohmann::json(nullptr) : nlohmann::json(sized->second)}});
  }
  write_file_atomically(file, doc.dump(2) + "\n");
}

}  // namespace tunebench
