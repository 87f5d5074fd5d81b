#include <gtest/gtest.h>

#include "timing/kernel_records.hpp"

using tunebench::attribute;
using tunebench::GraphLaunch;
using tunebench::KernelRecord;
using tunebench::WindowIds;

namespace {
// Windows that only made API calls with these correlation ids.
std::vector<WindowIds> calls(std::vector<std::vector<std::uint32_t>> ids) {
  std::vector<WindowIds> out;
  for (auto& i : ids) out.push_back({std::move(i), {}});
  return out;
}
}  // namespace

TEST(KernelRecords, SumsEachWindowsKernelsAndNothingElse) {
  // Window 0: a two-kernel op (ids 10, 11); window 1: one kernel (id 20). Id 15 is harness
  // work between the windows (an L2 flush), id 99 another thread's launch.
  const std::vector<KernelRecord> records = {
      {1000, 1600, 10}, {1700, 1900, 11}, {2000, 9000, 15}, {9100, 9400, 20}, {500, 800, 99}};
  const auto t = attribute(records, calls({{10, 11}, {20}}));
  ASSERT_EQ(t.ns.size(), 2u);
  EXPECT_EQ(t.ns[0], 600 + 200);  // a sum of durations, not the 900 ns span
  EXPECT_EQ(t.ns[1], 300);
  EXPECT_EQ(t.kernels[0], 2u);
  EXPECT_EQ(t.kernels[1], 1u);
  EXPECT_EQ(t.unattributed, 2u);
  EXPECT_EQ(t.invalid, 0u);
}

TEST(KernelRecords, DropsAndCountsInvalidAndDuplicateRecords) {
  const std::vector<KernelRecord> records = {{0, 0, 1},        // both timestamps zero
                                             {100, 0, 1},      // end zero: flushed while running
                                             {500, 400, 1},    // reversed
                                             {1000, 1500, 1},  // valid
                                             {1000, 1500, 1},  // the same record delivered twice
                                             {2000, 2100, 2}};
  const auto t = attribute(records, calls({{1}, {2}, {3}}));
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

TEST(KernelRecords, GraphKernelsWithoutALaunchIdAreDealtToTheirLaunchesInOrder) {
  // Three windows, each one launch (correlation ids 5, 6, 7) of graph 3 (exec 9) with two
  // kernel nodes; CUPTI reports the graph kernels with graph id 3 and correlation ids no window
  // made. A kernel of another graph (id 4) launched by nobody here stays unattributed.
  std::vector<WindowIds> windows(3);
  for (std::uint32_t w = 0; w < 3; ++w) windows[w] = {{5 + w}, {GraphLaunch{3, 9, 2}}};
  std::vector<KernelRecord> records;
  for (std::uint64_t i = 0; i < 6; ++i) {
    records.push_back({1000 * (6 - i), 1000 * (6 - i) + 10 * (6 - i), 0, 3});  // delivered out of order
  }
  records.push_back({50, 60, 0, 4});
  const auto t = attribute(records, windows);
  ASSERT_EQ(t.kernels, (std::vector<std::size_t>{2, 2, 2}));
  EXPECT_EQ(t.ns[0], 10 + 20);  // the two earliest
  EXPECT_EQ(t.ns[1], 30 + 40);
  EXPECT_EQ(t.ns[2], 50 + 60);
  EXPECT_EQ(t.unattributed, 1u);
}

TEST(KernelRecords, GraphKernelsCarryingTheLaunchIdAreAttributedByIt) {
  // The same graph launched in two windows; records name the launch's correlation id (and the
  // exec id, not the graph id): the launch id decides, the order of delivery does not.
  std::vector<WindowIds> windows = {{{40}, {GraphLaunch{3, 9, 1}}}, {{41}, {GraphLaunch{3, 9, 1}}}};
  const std::vector<KernelRecord> records = {{5000, 5300, 41, 9}, {1000, 1100, 40, 9}};
  const auto t = attribute(records, windows);
  EXPECT_EQ(t.ns, (std::vector<std::int64_t>{100, 300}));
  EXPECT_EQ(t.unattributed, 0u);
}

TEST(KernelRecords, GraphRecordsMatchTheExecutableGraphIdToo) {
  std::vector<WindowIds> windows = {{{1}, {GraphLaunch{3, 9, 1}}}};
  const auto t = attribute({{100, 250, 0, 9}}, windows);
  EXPECT_EQ(t.ns, (std::vector<std::int64_t>{150}));
}

TEST(KernelRecords, SurplusGraphRecordsAreCountedNotAdded) {
  // One launch of a one-kernel graph, two records of that graph: the window takes the earlier;
  // the surplus is counted, never added to a window.
  std::vector<WindowIds> windows = {{{1}, {GraphLaunch{3, 9, 1}}}};
  const auto t = attribute({{100, 200, 0, 3}, {300, 700, 0, 3}}, windows);
  EXPECT_EQ(t.ns, (std::vector<std::int64_t>{100}));
  EXPECT_EQ(t.unattributed, 1u);
}

TEST(KernelRecords, ABatchGraphsRunsAreDealtTheirKernelsInStartOrder) {
  // The graph-batched loop: a graph of three runs (1, 2 and 1 kernels) launched twice, outside
  // every window. Records come out of order, with the launch's correlation id and the graph id.
  const std::vector<std::size_t> per_run = {1, 2, 1};
  std::vector<KernelRecord> records;
  for (std::uint64_t i = 0; i < 8; ++i) {
    const std::uint32_t launch_id = i < 4 ? 77 : 78;
    records.push_back({1000 * (i + 1), 1000 * (i + 1) + 10 * (i + 1), launch_id, 3});
  }
  std::swap(records[0], records[5]);
  const auto t = tunebench::attribute_graph_runs(records, GraphLaunch{3, 9, 8}, per_run, 2);
  ASSERT_EQ(t.kernels, (std::vector<std::size_t>{1, 2, 1, 1, 2, 1}));
  EXPECT_EQ(t.ns, (std::vector<std::int64_t>{10, 20 + 30, 40, 50, 60 + 70, 80}));
  EXPECT_EQ(t.unattributed, 0u);
}

TEST(KernelRecords, ABatchDropsBadRecordsAndLeavesOtherWorkOut) {
  // Records under the executable graph's id (9); an invalid one, a duplicate, a kernel of the
  // L2 flush or of another graph: none reaches a run, each is counted where it belongs. The
  // last run gets no record: the caller sees 0 kernels and ends the benchmark.
  const std::vector<KernelRecord> records = {{100, 150, 1, 9}, {100, 150, 1, 9},  // the same record twice
                                             {0, 0, 1, 9},                        // invalid
                                             {200, 260, 1, 9}, {50, 90, 5, 0},    // harness work
                                             {300, 400, 1, 4}};                   // another graph
  const auto t = tunebench::attribute_graph_runs(records, GraphLaunch{3, 9, 3}, {1}, 3);
  EXPECT_EQ(t.ns, (std::vector<std::int64_t>{50, 60, 0}));
  EXPECT_EQ(t.kernels, (std::vector<std::size_t>{1, 1, 0}));
  EXPECT_EQ(t.invalid, 1u);
  EXPECT_EQ(t.duplicates, 1u);
  EXPECT_EQ(t.unattributed, 2u);
}
