#include "report/bencher_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "common/atomic_file.hpp"

namespace tunebench {
namespace {

using Run = benchmark::BenchmarkReporter::Run;

// Bencher's built-in latency measure is in nanoseconds, whatever unit the op reports in.
double nanoseconds_per(benchmark::TimeUnit unit) {
  switch (unit) {
    case benchmark::kNanosecond:
      return 1;
    case benchmark::kMicrosecond:
      return 1e3;
    case benchmark::kMillisecond:
      return 1e6;
    case benchmark::kSecond:
      return 1e9;
  }
  return 0;
}

// The rate counters a dashboard charts beside the latency, by the names the JSON gives them.
constexpr const char* kThroughputs[] = {"TFLOP/s", "GB/s"};

// Linear interpolation between order statistics: monotone in q, so p20 <= p50 <= p80.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = (v.size() - 1) * q;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - lo) * (v[lo + 1] - v[lo]);
}

}  // namespace

void BencherFile::add(const std::vector<Run>& runs) {
  for (const auto& run : runs) {
    Benchmark& b = benchmarks_[run.run_name.str()];
    if (run.error_occurred) {
      b.failed = true;
      continue;
    }
    const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
    if (run.run_type != Run::RT_Iteration && !median) continue;  // mean, stddev, cv: not a sample
    const auto record = [&](const std::string& measure, double v) {
      if (!std::isfinite(v)) return;
      Figures& f = b.measures[measure];
      if (median) {
        f.median = v;
      } else {
        f.samples.push_back(v);
      }
    };
    record("latency", run.GetAdjustedRealTime() * nanoseconds_per(run.time_unit));
    for (const char* name : kThroughputs) {
      if (const auto c = run.counters.find(name); c != run.counters.end()) record(name, c->second.value);
    }
  }
}

std::string BencherFile::text() const {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [name, b] : benchmarks_) {
    if (b.failed) continue;
    nlohmann::json measures = nlohmann::json::object();
    for (const auto& [measure, f] : b.measures) {
      if (!f.samples.empty()) {
        measures[measure] = {{"value", quantile(f.samples, 0.5)},
                             {"lower_value", quantile(f.samples, 0.2)},
                             {"upper_value", quantile(f.samples, 0.8)}};
      } else if (f.median) {
        measures[measure] = {{"value", *f.median}};
      }
    }
    if (measures.contains("latency")) doc[name] = std::move(measures);
  }
  return doc.dump(2) + "\n";
}

void BencherFile::write(const std::filesystem::path& dir) const { write_file_atomically(dir / "bencher.json", text()); }

}  // namespace tunebench
