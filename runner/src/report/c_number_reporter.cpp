#include "report/c_number_reporter.hpp"

#include <stdexcept>

namespace tunebench {

void JsonWithoutCvReporter::ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) {
  std::vector<benchmark::BenchmarkReporter::Run> kept;
  for (const auto& run : runs) {
    const bool ratio =
        run.run_type == benchmark::BenchmarkReporter::Run::RT_Aggregate && run.aggregate_unit == benchmark::kPercentage;
    if (!ratio) kept.push_back(run);
  }
  // JSONReporter writes the separator before a batch: an empty one would leave a stray comma.
  if (!kept.empty()) CNumbersReporter<benchmark::JSONReporter>::ReportRuns(kept);
}

namespace {

template <class R>
std::unique_ptr<benchmark::BenchmarkReporter> observed(std::unique_ptr<R> reporter, RunObserver observer) {
  reporter->observe(std::move(observer));
  return reporter;
}

}  // namespace

std::unique_ptr<benchmark::BenchmarkReporter> make_c_numbers_reporter(
    const std::string& format, benchmark::ConsoleReporter::OutputOptions console_options, RunObserver observer) {
  if (format == "json") return observed(std::make_unique<JsonWithoutCvReporter>(), std::move(observer));
  if (format == "csv") {
    // Deprecated in 1.7.1 but still what --benchmark_format=csv gives: bench keeps offering it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return observed(std::make_unique<CNumbersReporter<benchmark::CSVReporter>>(), std::move(observer));
#pragma GCC diagnostic pop
  }
  if (format == "console") {
    return observed(std::make_unique<CNumbersReporter<benchmark::ConsoleReporter>>(console_options),
                    std::move(observer));
  }
  throw std::invalid_argument("'" + format + "': expected console, json or csv");
}

}  // namespace tunebench
