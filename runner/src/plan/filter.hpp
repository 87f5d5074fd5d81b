#pragma once
// The benchmarks a --benchmark_filter selects, decided as Google Benchmark 1.7.1 decides it.

#include <regex>
#include <string>
#include <string_view>

namespace tunebench {

/// A --benchmark_filter value: "" or "all" select everything; a leading '-' negates the rest;
/// the rest is a POSIX extended regular expression searched anywhere in the reported name
/// (Google Benchmark 1.7.1, src/benchmark.cc FindBenchmarks and src/re.h).
class BenchmarkFilter {
 public:
  /// Throws std::invalid_argument naming the filter when the regex does not compile.
  explicit BenchmarkFilter(std::string spec);
  bool selects(std::string_view reported_name) const;
  const std::string& spec() const { return spec_; }
  /// The spec to hand Google Benchmark's RunSpecifiedBenchmarks, selecting what this filter
  /// selects: spec() itself, except that a filter selecting everything ("", "all", ".") is
  /// given as "^". Google Benchmark 1.7.1's FindBenchmarks (src/benchmark_register.cc) reserves
  /// its list of benchmarks one family at a time when the spec is ".", so every registered
  /// family reallocates and moves the whole list: a listing of N families took time in N^2
  /// (100,000 families: minutes). Any other spec lets the list grow geometrically.
  std::string run_spec() const;

 private:
  std::string spec_;
  std::regex regex_;
  bool negative_ = false;
};

}  // namespace tunebench
