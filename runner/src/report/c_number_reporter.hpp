#pragma once
// The reporters tunebench hands Google Benchmark, owning their streams' number format: an op's
// prepare() may set the process's locale between two reports (report/ and common/c_numbers.hpp).

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/c_numbers.hpp"
#include "timing/iteration_sizing.hpp"

namespace tunebench {

/// Called with every batch of runs a reporter is handed, before it writes them: how the run
/// directory's bencher.json sees the runs that go into the results file.
using RunObserver = std::function<void(const std::vector<benchmark::BenchmarkReporter::Run>&)>;

/// `Base` (a Google Benchmark reporter) that, before each report, makes the process's numeric
/// locale "C" (use_c_numbers: Google Benchmark formats with the global locale and snprintf) and
/// imbues its output and error streams with the classic numeric facets. Runs are reported (and
/// observed) under their names without an "/iterations:N" part (without_sized_iterations).
template <class Base>
class CNumbersReporter : public Base {
 public:
  using Base::Base;
  bool ReportContext(const benchmark::BenchmarkReporter::Context& context) override {
    settle();
    return Base::ReportContext(context);
  }
  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    settle();
    const auto named = without_sized_iterations(runs);
    if (observer_) observer_(named);
    Base::ReportRuns(named);
  }
  void Finalize() override {
    settle();
    Base::Finalize();
  }
  /// Shows `observer` every batch of runs from now on.
  void observe(RunObserver observer) { observer_ = std::move(observer); }

 private:
  RunObserver observer_;
  void settle() {
    use_c_numbers();
    imbue_c_numbers(this->GetOutputStream());
    imbue_c_numbers(this->GetErrorStream());
  }
};

/// Google Benchmark's JSON reporter, less the cv aggregate: dashboards that read Google
/// Benchmark JSON (github-action-benchmark's googlecpp, Bencher's cpp_google) chart every
/// entry's real_time as a time, and cv's real_time is a ratio. The other aggregates are times;
/// compare.py pairs the rest as before (Google Benchmark before 1.6 wrote no cv either). The
/// console and the latency table keep cv.
class JsonWithoutCvReporter : public CNumbersReporter<benchmark::JSONReporter> {
 public:
  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override;
};

/// Google Benchmark's reporter for `format` ("console", "json" or "csv", as
/// --benchmark_format and --benchmark_out_format name them), as a CNumbersReporter (json:
/// JsonWithoutCvReporter); console with `console_options`; `observer`, when set, sees every batch
/// of runs.
std::unique_ptr<benchmark::BenchmarkReporter> make_c_numbers_reporter(
    const std::string& format, benchmark::ConsoleReporter::OutputOptions console_options, RunObserver observer = {});

}  // namespace tunebench
