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
/// Where an op's baseline (Op::baseline) ran for the same shape, the op's row also shows the
/// baseline's p50 and the speedup (baseline p50 / op p50; the columns appear in a set's table
/// when some row has one). A benchmark whose SM clock fell by more than 5% inside a timing loop
/// (its sm_mhz_start / sm_mhz_end counters, the worst repetition) has the start and end clock in
/// its status, and a line under the tables counts them. The same tables go to
/// <markdown_dir>/latency.md when a folder is given. The JSON output is not affected (it is the
/// file reporter's).
class LatencyTableReporter : public benchmark::ConsoleReporter {
 public:
  /// `families`: every registered family (rows are matched by reported name); `markdown_dir`:
  /// where latency.md goes ("" for nowhere); `options`: ConsoleReporter's (color, tabular).
  LatencyTableReporter(const std::vector<Family>& families, std::filesystem::path markdown_dir, OutputOptions options);
  void ReportRuns(const std::vector<Run>& reports) override;
  void Finalize() override;

  /// The tables as Markdown (what Finalize prints and writes).
  std::string markdown() const;

 private:
  struct Row {
    const Family* family = nullptr;
    std::string config, status = "ok", unit;
    double p50 = 0, cv = -1;
    double unit_s = 1;                      // seconds per `unit`
    double clock_start = 0, clock_end = 0;  // MHz, the repetition whose clock fell most
    bool throttled() const { return clock_start > 0 && clock_end < 0.95 * clock_start; }
    std::map<std::string, double> counters;  // rate_counters() by name
    bool have_median = false;
  };
  std::map<std::string, const Family*> by_name_;
  std::vector<std::string> order_;  // reported names in first-seen order
  std::map<std::string, Row> rows_;
  std::filesystem::path markdown_dir_;
  const Row* baseline_of(const Row& row) const;
};

}  // namespace tunebench
