// The latency table on synthetic runs: the baseline's p50 and the speedup in an op's row, and a
// benchmark whose SM clock fell inside its timing loop flagged and counted, in the singular for one.

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host_op.hpp"
#include "plan/family.hpp"
#include "report/baseline_speedup.hpp"
#include "report/latency_table.hpp"

namespace {

std::shared_ptr<const tunebench::Op> op(std::string name, std::string baseline = "") {
  return std::make_shared<tunebench::testing::HostOp>(std::move(name), std::vector<std::int64_t>{1},
                                                      std::vector<std::int64_t>{}, std::move(baseline));
}

tunebench::Shape shape(std::int64_t m) {
  tunebench::Shape s;
  s.set = "set";
  s.gemm = "w13";
  s.m = m;
  s.n = 64;
  s.k = 64;
  return s;
}

benchmark::BenchmarkReporter::Run run(const std::string& name, double us, double clock_start = 0,
                                      double clock_end = 0) {
  benchmark::BenchmarkReporter::Run r;
  r.run_name.function_name = name;
  r.run_type = benchmark::BenchmarkReporter::Run::RT_Iteration;
  r.iterations = 10;
  r.real_accumulated_time = us * 1e-6 * 10;
  r.cpu_accumulated_time = r.real_accumulated_time;
  r.time_unit = benchmark::kMicrosecond;
  r.report_label = "B=1";
  if (clock_start > 0) {
    r.counters["sm_mhz_start"] = clock_start;
    r.counters["sm_mhz_end"] = clock_end;
  }
  return r;
}

}  // namespace

TEST(LatencyTable, AnOpsRowShowsItsBaselineAndTheSpeedup) {
  const tunebench::OpList ops = {op("fast_op", "base_op"), op("base_op")};
  const auto families = tunebench::make_families(ops, {tunebench::ShapeSet{"set", "", {}, {shape(1), shape(8)}}});
  tunebench::LatencyTableReporter table(families, "", benchmark::ConsoleReporter::OO_None);
  std::ostringstream sink;
  table.SetOutputStream(&sink);
  table.SetErrorStream(&sink);
  // fast_op at M=1: 2 us against the baseline's 5 us; at M=8 the baseline did not run.
  table.ReportRuns({run("fast_op/set/M:1/N:64/K:64/manual_time", 2.0)});
  table.ReportRuns({run("fast_op/set/M:8/N:64/K:64/manual_time", 4.0)});
  table.ReportRuns({run("base_op/set/M:1/N:64/K:64/manual_time", 5.0)});
  const std::string md = table.markdown();
  EXPECT_NE(md.find("| baseline p50 | speedup |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fast_op | 1 | 64 | 64 | B=1 | 2 us | - | base_op 5 us | 2.50x |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fast_op | 8 | 64 | 64 | B=1 | 4 us | - | - | - |"), std::string::npos) << md;
  // The baseline's own row has no baseline.
  EXPECT_NE(md.find("| base_op | 1 | 64 | 64 | B=1 | 5 us | - | - | - |"), std::string::npos) << md;
}

TEST(LatencyTable, ATableWithoutBaselinesHasNoBaselineColumns) {
  const tunebench::OpList ops = {op("alone_op")};
  const auto families = tunebench::make_families(ops, {tunebench::ShapeSet{"set", "", {}, {shape(1)}}});
  tunebench::LatencyTableReporter table(families, "", benchmark::ConsoleReporter::OO_None);
  std::ostringstream sink;
  table.SetOutputStream(&sink);
  table.ReportRuns({run("alone_op/set/M:1/N:64/K:64/manual_time", 2.0)});
  EXPECT_EQ(table.markdown().find("baseline"), std::string::npos);
}

TEST(LatencyTable, ABenchmarkWhoseClockFellIsFlaggedAndCounted) {
  const tunebench::OpList ops = {op("hot_op")};
  const auto families = tunebench::make_families(ops, {tunebench::ShapeSet{"set", "", {}, {shape(1), shape(8)}}});
  tunebench::LatencyTableReporter table(families, "", benchmark::ConsoleReporter::OO_None);
  std::ostringstream sink;
  table.SetOutputStream(&sink);
  // M=1: 1980 -> 1940 MHz (2%, not flagged); M=8: its second repetition fell 1980 -> 1410.
  table.ReportRuns({run("hot_op/set/M:1/N:64/K:64/manual_time", 2.0, 1980, 1940)});
  table.ReportRuns({run("hot_op/set/M:8/N:64/K:64/manual_time", 3.0, 1980, 1900),
                    run("hot_op/set/M:8/N:64/K:64/manual_time", 3.0, 1980, 1410)});
  const std::string md = table.markdown();
  EXPECT_NE(md.find("| ok (SM clock 1980 -> 1410 MHz) |"), std::string::npos) << md;
  EXPECT_EQ(md.find("1940 MHz"), std::string::npos) << md;
  EXPECT_NE(md.find("1 of 2 benchmarks saw the SM clock fall by more than 5%"), std::string::npos) << md;
}

TEST(BaselineSpeedup, TheJsonEntryOfAnOpCarriesItsSpeedupOverTheBaseline) {
  const tunebench::OpList ops = {op("fast_op", "base_op"), op("base_op")};
  const auto families = tunebench::make_families(ops, {tunebench::ShapeSet{"set", "", {}, {shape(1), shape(8)}}});
  auto doc = nlohmann::json::parse(R"({"context": {}, "benchmarks": [
    {"run_name": "fast_op/set/M:1/N:64/K:64/manual_time", "run_type": "iteration", "real_time": 2.0, "time_unit": "us"},
    {"run_name": "fast_op/set/M:1/N:64/K:64/manual_time", "run_type": "aggregate", "aggregate_name": "median", "real_time": 2.5, "time_unit": "us"},
    {"run_name": "fast_op/set/M:1/N:64/K:64/manual_time", "run_type": "aggregate", "aggregate_name": "cv", "real_time": 0.01, "time_unit": "us"},
    {"run_name": "fast_op/set/M:8/N:64/K:64/manual_time", "run_type": "iteration", "real_time": 4.0, "time_unit": "us"},
    {"run_name": "base_op/set/M:1/N:64/K:64/manual_time", "run_type": "iteration", "real_time": 6000, "time_unit": "ns"},
    {"run_name": "base_op/set/M:1/N:64/K:64/manual_time", "run_type": "aggregate", "aggregate_name": "median", "real_time": 5000, "time_unit": "ns"},
    {"run_name": "base_op/set/M:8/N:64/K:64/manual_time", "run_type": "iteration", "error_occurred": true, "real_time": 0, "time_unit": "us"}
  ]})");
  EXPECT_EQ(tunebench::add_baseline_speedups(doc, families), 2);
  const auto& b = doc["benchmarks"];
  EXPECT_DOUBLE_EQ(b[0]["baseline_speedup"].get<double>(), 2.5);  // the baseline's median, 5 us, in its own unit
  EXPECT_DOUBLE_EQ(b[1]["baseline_speedup"].get<double>(), 2.0);
  EXPECT_FALSE(b[2].contains("baseline_speedup"));  // a cv is no time
  EXPECT_FALSE(b[3].contains("baseline_speedup"));  // its baseline failed
  EXPECT_FALSE(b[4].contains("baseline_speedup"));  // the baseline has none of its own
}

// Counts of one read in the singular: a shape left out of the trace-weighted total, a throttled
// benchmark of one measured.
TEST(LatencyTable, CountsOfOneAreSingular) {
  const tunebench::OpList ops = {op("one_op")};
  tunebench::Shape counted = shape(1);
  counted.calls = 10;
  const auto families = tunebench::make_families(ops, {tunebench::ShapeSet{"set", "", {}, {counted, shape(8)}}});
  tunebench::LatencyTableReporter table(families, "", benchmark::ConsoleReporter::OO_None);
  std::ostringstream sink;
  table.SetOutputStream(&sink);
  table.ReportRuns({run("one_op/set/M:1/N:64/K:64/manual_time", 2.0)});
  table.ReportRuns({run("one_op/set/M:8/N:64/K:64/manual_time", 3.0)});
  EXPECT_NE(table.markdown().find("; 1 shape without counts or failed left out)"), std::string::npos)
      << table.markdown();
  tunebench::LatencyTableReporter hot(families, "", benchmark::ConsoleReporter::OO_None);
  hot.SetOutputStream(&sink);
  hot.ReportRuns({run("one_op/set/M:1/N:64/K:64/manual_time", 2.0, 1980, 1410)});
  EXPECT_NE(hot.markdown().find("1 of 1 benchmark saw the SM clock fall"), std::string::npos) << hot.markdown();
}
