#pragma once
// The reporters tunebench hands Google Benchmark, owning their streams' number format: an op's
// prepare() may set the process's locale between two reports (report/ and common/c_numbers.hpp).

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "common/c_numbers.hpp"

namespace tunebench {

/// `Base` (a Google Benchmark reporter) that, before each report, makes the process's numeric
/// locale "C" (use_c_numbers: Google Benchmark formats with the global locale and snprintf) and
/// imbues its output and error streams with the classic numeric facets.
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
    Base::ReportRuns(runs);
  }
  void Finalize() override {
    settle();
    Base::Finalize();
  }

 private:
  void settle() {
    use_c_numbers();
    imbue_c_numbers(this->GetOutputStream());
    imbue_c_numbers(this->GetErrorStream());
  }
};

/// Google Benchmark's reporter for `format` ("console", "json" or "csv", as
/// --benchmark_format and --benchmark_out_format name them), as a CNumbersReporter; console
/// with `console_options`.
std::unique_ptr<benchmark::BenchmarkReporter> make_c_numbers_reporter(
    const std::string& format, benchmark::ConsoleReporter::OutputOptions console_options);

}  // namespace tunebench
