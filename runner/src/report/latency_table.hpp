#pragma once
// The latency table: Google Benchmark's console output, then one table per shape set.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "plan/family.hpp"

namespace tunebench {

/// A console reporter that, after Google Benchmark's usual lines, prints per shape set a table
/// of op, shape, config, kernel time (p50: the median of the repetitions, or the single run;
/// with repetitions also the coefficient of variation), TFLOP/s, GB/s, roofline% and status,
/// and per op a trace-weighted total, sum(calls x p50), over the shapes that carry call counts.
/// The same tables go to <markdown_dir>/latency.md when a folder is given. The JSON output is
/// not affected (it is the file reporter's).
class LatencyTableReporter : public benchmark::ConsoleReporter {
 public:
  /// `families`: every registered family (rows are matched by reported name); `markdown_dir`:
  /// where latency.md goes ("" for nowhere); `options`: ConsoleReporter's (color, tabular).
  LatencyTableReporter(const std::vector<Family>& families, std::filesystem::path markdown_dir,
                       OutputOptions options);
  void ReportRuns(const std::vector<Run>& reports) override;
  void Finalize() override;

  /// The tables as Markdown (what Finalize prints and writes).
  std::string markdown() const;

 private:
  struct Row {
    const Family* family = nullptr;
    std::string config, status = "ok", unit;
    double p50 = 0, cv = -1;
    std::map<std::string, double> counters;  // rate_counters() by name
    bool have_median = false;
  };
  std::map<std::string, const Family*> by_name_;
  std::vector<std::string> order_;  // reported names in first-seen order
  std::map<std::string, Row> rows_;
  std::filesystem::path markdown_dir_;
};

}  // namespace tunebench
