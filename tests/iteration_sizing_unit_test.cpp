// The iteration count given up front: Google Benchmark 1.7.1's own arithmetic, and the names.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "timing/iteration_sizing.hpp"

TEST(IterationSizing, IsWhatGoogleBenchmarksRoundsSettleOn) {
  // 1.4 x min_time of runs: 0.5 s of 10 us runs -> 70000 (0.7 s); 0.01 s of 3 us -> 4667.
  EXPECT_EQ(tunebench::sized_iterations(0.5, 10e-6), 70000);
  EXPECT_EQ(tunebench::sized_iterations(0.01, 3e-6), 4667);
  // A run longer than 1.4 x min_time still runs once; a vanishing one stops at 1e9.
  EXPECT_EQ(tunebench::sized_iterations(0.5, 2.0), 1);
  EXPECT_EQ(tunebench::sized_iterations(0.5, 1e-15), 1000000000);
  // --benchmark_min_time=0: Google Benchmark's first round, one iteration, is the one it reports.
  EXPECT_EQ(tunebench::sized_iterations(0, 1e-6), 1);
}

TEST(IterationSizing, RefusesTimesThatSizeNothing) {
  EXPECT_THROW(tunebench::sized_iterations(0.5, 0), std::invalid_argument);
  EXPECT_THROW(tunebench::sized_iterations(0.5, -1e-6), std::invalid_argument);
  EXPECT_THROW(tunebench::sized_iterations(0.5, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_THROW(tunebench::sized_iterations(-0.5, 1e-6), std::invalid_argument);
  EXPECT_THROW(tunebench::sized_iterations(std::numeric_limits<double>::infinity(), 1e-6), std::invalid_argument);
}

TEST(IterationSizing, ReportedNamesLoseOnlyTheIterationCount) {
  benchmark::BenchmarkReporter::Run run;
  run.run_name.function_name = "op/set/M:1/N:256/K:512";
  run.run_name.iterations = "iterations:4667";
  run.run_name.time_type = "manual_time";
  ASSERT_EQ(run.benchmark_name(), "op/set/M:1/N:256/K:512/iterations:4667/manual_time");
  const auto named = tunebench::without_sized_iterations({run});
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].benchmark_name(), "op/set/M:1/N:256/K:512/manual_time");
}
