#include <gtest/gtest.h>

#include "tunebench/kernel_records.hpp"

using tunebench::attribute;
using tunebench::KernelRecord;

TEST(KernelRecords, SumsEachWindowsKernelsAndNothingElse) {
  // Window 0: a two-kernel op (ids 10, 11); window 1: one kernel (id 20). Id 15 is harness
  // work between the windows (an L2 flush), id 99 another thread's launch.
  const std::vector<KernelRecord> records = {
      {1000, 1600, 10}, {1700, 1900, 11}, {2000, 9000, 15}, {9100, 9400, 20}, {500, 800, 99}};
  const auto t = attribute(records, {{10, 11}, {20}});
  ASSERT_EQ(t.ns.size(), 2u);
  EXPECT_EQ(t.ns[0], 600 + 200);  // a sum of durations, not the 900 ns span
  EXPECT_EQ(t.ns[1], 300);
  EXPECT_EQ(t.kernels[0], 2u);
  EXPECT_EQ(t.kernels[1], 1u);
  EXPECT_EQ(t.unattributed, 2u);
  EXPECT_EQ(t.invalid, 0u);
}

TEST(KernelRecords, DropsAndCountsInvalidAndDuplicateRecords) {
  const std::vector<KernelRecord> records = {
      {0, 0, 1},       // both timestamps zero
      {100, 0, 1},     // end zero: flushed while running
      {500, 400, 1},   // reversed
      {1000, 1500, 1}, // valid
      {1000, 1500, 1}, // the same record delivered twice
      {2000, 2100, 2}};
  const auto t = attribute(records, {{1}, {2}, {3}});
  EXPECT_EQ(t.invalid, 3u);
  EXPECT_EQ(t.duplicates, 1u);
  EXPECT_EQ(t.ns[0], 500);
  EXPECT_EQ(t.ns[1], 100);
  EXPECT_EQ(t.ns[2], 0);  // a window without a valid record: the caller must not report it
  EXPECT_EQ(t.kernels[2], 0u);
}

TEST(KernelRecords, NoWindowsNoTimes) {
  const auto t = attribute({{10, 20, 1}}, {});
  EXPECT_TRUE(t.ns.empty());
  EXPECT_EQ(t.unattributed, 1u);
}
