#include "report/c_number_reporter.hpp"

#include <stdexcept>

namespace tunebench {

std::unique_ptr<benchmark::BenchmarkReporter> make_c_numbers_reporter(
    const std::string& format, benchmark::ConsoleReporter::OutputOptions console_options) {
  if (format == "json") return std::make_unique<CNumbersReporter<benchmark::JSONReporter>>();
  if (format == "csv") {
    // Deprecated in 1.7.1 but still what --benchmark_format=csv gives: bench keeps offering it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return std::make_unique<CNumbersReporter<benchmark::CSVReporter>>();
#pragma GCC diagnostic pop
  }
  if (format == "console") return std::make_unique<CNumbersReporter<benchmark::ConsoleReporter>>(console_options);
  throw std::invalid_argument("'" + format + "': expected console, json or csv");
}

}  // namespace tunebench
