#include "plan/filter.hpp"

#include <stdexcept>

namespace tunebench {

BenchmarkFilter::BenchmarkFilter(std::string spec) : spec_(std::move(spec)) {
  std::string pattern = spec_;
  if (pattern.empty() || pattern == "all") pattern = ".";
  if (pattern[0] == '-') {
    negative_ = true;
    pattern.erase(0, 1);
  }
  try {
    regex_ = std::regex(pattern, std::regex::extended);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--benchmark_filter='" + spec_ + "': not a valid regex: " + e.what());
  }
}

std::string BenchmarkFilter::run_spec() const {
  if (spec_.empty() || spec_ == "all" || spec_ == ".") return "^";
  return spec_;
}

bool BenchmarkFilter::selects(std::string_view name) const {
  return std::regex_search(name.begin(), name.end(), regex_) != negative_;
}

}  // namespace tunebench
