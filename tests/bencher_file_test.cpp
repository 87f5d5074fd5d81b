#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/bencher_file.hpp"

namespace {

using GbRun = benchmark::BenchmarkReporter::Run;

GbRun repetition(const std::string& name, double seconds, double tflops) {
  GbRun r;
  r.run_name.function_name = name;
  r.run_name.time_type = "manual_time";
  r.iterations = 1;
  r.time_unit = benchmark::kMicrosecond;
  r.real_accumulated_time = seconds;
  r.cpu_accumulated_time = 1;  // never what the file records
  r.counters["TFLOP/s"] = tflops;
  r.counters["GB/s"] = 2 * tflops;
  return r;
}

GbRun aggregate(GbRun r, const std::string& name, double seconds) {
  r.run_type = GbRun::RT_Aggregate;
  r.aggregate_name = name;
  r.aggregate_unit = name == "cv" ? benchmark::kPercentage : benchmark::kTime;
  r.real_accumulated_time = seconds;
  return r;
}

}  // namespace

// Four repetitions: the median and the interpolated 20th/80th percentiles, in ns; the
// aggregates that follow (a cv of 0.5 among them) are not samples.
TEST(BencherFile, MedianAndPercentilesOfTheRepetitionsInNanoseconds) {
  tunebench::BencherFile file;
  const std::vector<GbRun> runs = {repetition("op/s/M:1", 4e-6, 4), repetition("op/s/M:1", 1e-6, 1),
                                   repetition("op/s/M:1", 3e-6, 3), repetition("op/s/M:1", 2e-6, 2)};
  std::vector<GbRun> aggregates = {aggregate(runs[0], "mean", 2.5e-6), aggregate(runs[0], "median", 2.5e-6),
                                   aggregate(runs[0], "cv", 0.5)};
  file.add(runs);
  file.add(aggregates);
  const auto doc = nlohmann::json::parse(file.text());
  ASSERT_EQ(doc.size(), 1u);
  const auto& latency = doc.at("op/s/M:1/manual_time").at("latency");
  EXPECT_DOUBLE_EQ(latency.at("value").get<double>(), 2500);
  EXPECT_DOUBLE_EQ(latency.at("lower_value").get<double>(), 1600);  // 1000 + 0.6 x 1000
  EXPECT_DOUBLE_EQ(latency.at("upper_value").get<double>(), 3400);
  const auto& gbs = doc.at("op/s/M:1/manual_time").at("GB/s");
  EXPECT_DOUBLE_EQ(gbs.at("value").get<double>(), 5);
  EXPECT_LE(gbs.at("lower_value").get<double>(), gbs.at("value").get<double>());
}

// A benchmark that failed in a repetition has no entry; one reported by its aggregates alone
// (--benchmark_report_aggregates_only) has the median as a value without bounds.
TEST(BencherFile, FailedLeftOutAggregatesOnlyGiveTheMedian) {
  tunebench::BencherFile file;
  GbRun failed = repetition("op/s/M:2", 0, 0);
  failed.error_occurred = true;
  failed.error_message = "no CUDA device";
  file.add({failed});
  const GbRun r = repetition("op/s/M:3", 1e-6, 1);
  file.add({aggregate(r, "mean", 3e-6), aggregate(r, "median", 2e-6), aggregate(r, "stddev", 1e-6)});
  const auto doc = nlohmann::json::parse(file.text());
  ASSERT_EQ(doc.size(), 1u);
  const auto& latency = doc.at("op/s/M:3/manual_time").at("latency");
  EXPECT_DOUBLE_EQ(latency.at("value").get<double>(), 2000);
  EXPECT_FALSE(latency.contains("lower_value"));
  EXPECT_EQ(tunebench::BencherFile().text(), "{}\n");
}
