#pragma once
// What bench adds to the --benchmark_out JSON file once the timing loop is over: what Google
// Benchmark wrote first (its context) could not know it yet.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/context_entry.hpp"
#include "plan/family.hpp"

namespace tunebench {

/// Completes the Google Benchmark JSON file `json_file` in one atomic rewrite: `entries` (the
/// timing stage's figures, the figures of keys tuned inside the loop) and the replay fallbacks'
/// `markers` (ChoiceLog::markers: marker -> families, as one space-separated list) join its
/// "context", and the entries get their baseline speedups (add_baseline_speedups). A file that
/// is not JSON (CSV output) is left as it is: the figures are on stderr and in the run
/// directory. Throws std::runtime_error when the file cannot be rewritten.
void complete_results_file(const std::filesystem::path& json_file, const std::vector<ContextEntry>& entries,
                           const std::map<std::string, std::vector<std::string>>& markers,
                           const std::vector<Family>& families);

}  // namespace tunebench
