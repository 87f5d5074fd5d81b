#pragma once
// bencher.json, the run directory's dashboard file in Bencher Metric Format (BMF): what a
// Bencher-style dashboard ingests as it is (README: "Run directories, record and replay").

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tunebench {

/// The BMF document of one run, filled from the runs Google Benchmark reports. Per benchmark
/// (its reported name, `/manual_time` included, the name compare.py pairs by): `latency` in
/// nanoseconds (Bencher's built-in latency measure) and the `TFLOP/s` and `GB/s` counters, each
/// as value = the median over the repetitions, lower_value / upper_value = their 20th / 80th
/// percentiles (linear interpolation, so lower <= value <= upper). When the reporter saw only
/// aggregates (--benchmark_report_aggregates_only), the median aggregate gives the value alone.
/// A benchmark that failed in any repetition, or has no figure, is left out: BMF has no way to
/// say "failed", and a 0 would chart as a time.
class BencherFile {
 public:
  /// Takes what one ReportRuns call hands a reporter (a benchmark's repetitions, then its
  /// aggregates).
  void add(const std::vector<benchmark::BenchmarkReporter::Run>& runs);
  /// The document, pretty-printed, ending in a newline; "{}\n" when nothing ran.
  std::string text() const;
  /// Writes text() to `dir`/bencher.json atomically; throws std::runtime_error naming the file.
  void write(const std::filesystem::path& dir) const;

 private:
  struct Figures {
    std::vector<double> samples;   // one per repetition
    std::optional<double> median;  // the median aggregate's, for runs reported without repetitions
  };
  struct Benchmark {
    bool failed = false;
    std::map<std::string, Figures> measures;  // BMF measure name -> figures
  };
  std::map<std::string, Benchmark> benchmarks_;
};

}  // namespace tunebench
