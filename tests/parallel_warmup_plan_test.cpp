#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>

#include "settings_from_env.hpp"
#include "sweep/shard_plan.hpp"

using tunebench::device_tokens;
using tunebench::order_for_pruning;
using tunebench::plan_shards;
using tunebench::ShardPlan;

namespace tunebench {
namespace {
int warmup_gpus_from_env() { return testing::settings_from_env().warmup_gpus; }
}  // namespace
}  // namespace tunebench

TEST(ParallelWarmup, TokensAreTheCallersEntriesAsWritten) {
  EXPECT_EQ(device_tokens("6,7", 0), (std::vector<std::string>{"6", "7"}));
  EXPECT_EQ(device_tokens("GPU-8a1b-22,MIG-3c4d/1/0", 0), (std::vector<std::string>{"GPU-8a1b-22", "MIG-3c4d/1/0"}));
  EXPECT_EQ(device_tokens(" 3 , 1", 0), (std::vector<std::string>{"3", "1"}));
  EXPECT_EQ(device_tokens(nullptr, 3), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_TRUE(device_tokens("", 4).empty());  // set but empty: no device is visible
  EXPECT_THROW(device_tokens("6,,7", 0), std::invalid_argument);
}

TEST(ParallelWarmup, ShardDevicesAreTheFirstNEntriesEachOnce) {
  using tunebench::shard_devices;
  const std::vector<std::string> tokens{"6", "7", "6"};
  EXPECT_EQ(shard_devices(tokens, 2, "6,7,6"), (std::vector<std::string>{"6", "7"}));  // the third is unused
  EXPECT_EQ(shard_devices({"0"}, 1, nullptr), (std::vector<std::string>{"0"}));
  const auto message = [](const std::vector<std::string>& t, int n, const char* visible) {
    try {
      shard_devices(t, n, visible);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(tokens, 3, "6,7,6"), "CUDA_VISIBLE_DEVICES lists '6' twice: two shards would share one GPU");
  EXPECT_EQ(message({"6", "7"}, 3, "6,7"),
            "PARALLEL_WARMUP_GPUS=3 but only 2 devices are visible (CUDA_VISIBLE_DEVICES=6,7)");
  EXPECT_EQ(message({}, 2, nullptr),
            "PARALLEL_WARMUP_GPUS=2 but no CUDA device is visible (CUDA_VISIBLE_DEVICES is unset, and no device was "
            "found): expected at least 2 GPUs to shard the sweep over");
  EXPECT_NE(message({}, 2, "").find("no CUDA device is visible (CUDA_VISIBLE_DEVICES is empty)"), std::string::npos);
  EXPECT_NE(message({"0", "1"}, 4, nullptr).find("only 2 devices are visible (CUDA_VISIBLE_DEVICES is unset"),
            std::string::npos);
}

// CUDA stops enumerating at the first invalid entry: -1 (CUDA's "no GPU"), or any negative
// integer, hides itself and every entry after it.
TEST(ParallelWarmup, ANegativeEntryHidesItselfAndTheRest) {
  EXPECT_TRUE(device_tokens("-1", 0).empty());
  EXPECT_TRUE(device_tokens("-1,0", 2).empty());
  EXPECT_TRUE(device_tokens(" -2 ,1", 0).empty());
  EXPECT_EQ(device_tokens("6,-1,7", 0), (std::vector<std::string>{"6"}));
  EXPECT_EQ(device_tokens("6,-1,,7", 0), (std::vector<std::string>{"6"}));   // nothing past -1 is read
  EXPECT_EQ(device_tokens("-,6", 0), (std::vector<std::string>{"-", "6"}));  // not a number: passed on
  EXPECT_EQ(device_tokens("GPU-8a1b-22,-1", 0), (std::vector<std::string>{"GPU-8a1b-22"}));
  const auto message = [](const char* visible, int n) {
    try {
      tunebench::shard_devices(device_tokens(visible, 0), n, visible);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("-1", 2),
            "PARALLEL_WARMUP_GPUS=2 but no CUDA device is visible (CUDA_VISIBLE_DEVICES is '-1': CUDA enumerates no "
            "device from its first negative entry on): expected at least 2 GPUs to shard the sweep over");
  EXPECT_NE(message("-1,0", 2).find("no CUDA device is visible (CUDA_VISIBLE_DEVICES is '-1,0': CUDA enumerates no"),
            std::string::npos);
  EXPECT_EQ(message("6,-1,7", 2),
            "PARALLEL_WARMUP_GPUS=2 but only 1 device is visible (CUDA_VISIBLE_DEVICES=6,-1,7: CUDA enumerates no "
            "device from its first negative entry on)");
  EXPECT_EQ(message("0,1,-1", 2), "accepted");
}

TEST(ParallelWarmup, GpusFromEnv) {
  for (const char* off : {"", "1"}) {
    ::setenv("PARALLEL_WARMUP_GPUS", off, 1);
    EXPECT_EQ(tunebench::warmup_gpus_from_env(), 1) << off;
  }
  ::unsetenv("PARALLEL_WARMUP_GPUS");
  EXPECT_EQ(tunebench::warmup_gpus_from_env(), 1);
  ::setenv("PARALLEL_WARMUP_GPUS", "8", 1);
  EXPECT_EQ(tunebench::warmup_gpus_from_env(), 8);
  ::setenv("PARALLEL_WARMUP_GPUS", "9999", 1);
  EXPECT_EQ(tunebench::warmup_gpus_from_env(), 9999);
  for (const char* bad : {"0", "-1", "x", "2x", "1.5", "10000"}) {
    ::setenv("PARALLEL_WARMUP_GPUS", bad, 1);
    try {
      tunebench::warmup_gpus_from_env();
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("PARALLEL_WARMUP_GPUS='") + bad +
                    "': expected the number of GPUs to shard the autotune sweep over, 1 to 9999");
    }
  }
  ::unsetenv("PARALLEL_WARMUP_GPUS");
}

TEST(ParallelWarmup, PlanBalancesCostTunesEveryKeyAndDoublesSome) {
  std::vector<double> costs;
  for (int i = 0; i < 40; ++i) costs.push_back(1 + (i * 37 % 11));
  const auto plan = plan_shards(costs, 4);
  ASSERT_EQ(plan.shards.size(), 4u);
  std::multiset<std::size_t> seen;
  std::vector<double> load;
  for (const auto& s : plan.shards) {
    double l = 0;
    for (auto k : s) {
      seen.insert(k);
      l += costs[k];
    }
    load.push_back(l);
  }
  for (std::size_t k = 0; k < costs.size(); ++k) {
    const auto copies = seen.count(k);
    const bool doubled = std::count(plan.doubled.begin(), plan.doubled.end(), k) > 0;
    EXPECT_EQ(copies, doubled ? 2u : 1u) << k;
  }
  EXPECT_EQ(plan.doubled.size(), 4u);  // 10% of 40
  // Dealing to the least-loaded shard keeps the loads within one key's cost of each other.
  EXPECT_LE(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()),
            *std::max_element(costs.begin(), costs.end()));
  // A doubled key's two copies are on different shards.
  for (auto k : plan.doubled) {
    int shards_with = 0;
    for (const auto& s : plan.shards) shards_with += std::count(s.begin(), s.end(), k) > 0;
    EXPECT_EQ(shards_with, 2) << k;
  }
  // Doubled keys come from the cheaper half: their extra sweep costs little.
  std::vector<double> sorted = costs;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  double extra = 0;
  for (auto k : plan.doubled) {
    EXPECT_LE(costs[k], median) << k;
    extra += costs[k];
  }
  EXPECT_LT(extra, 0.1 * std::accumulate(costs.begin(), costs.end(), 0.0));
  EXPECT_EQ(plan_shards({5.0}, 2).doubled.size(), 1u);  // at least one key when N >= 2
  EXPECT_TRUE(plan_shards({5.0, 3.0}, 1).doubled.empty());
}

// For pruning by the key with half the M, a shard visits each group's keys from the smallest M
// up, in the positions the group had; its first key stays first, other groups stay where they were.
TEST(ParallelWarmup, ShardsVisitEachGroupFromTheSmallestMUpButTheirFirstKey) {
  // Keys 0..3: group a, M 512..4096; 4..5: group b, M 8 and 16; 6: group c alone.
  const std::vector<std::string> group{"a", "a", "a", "a", "b", "b", "c"};
  const std::vector<std::int64_t> m{512, 1024, 2048, 4096, 8, 16, 64};
  ShardPlan plan;
  plan.shards = {{3, 4, 2, 6, 5, 1, 0}, {}};
  order_for_pruning(plan, group, m);
  EXPECT_EQ(plan.shards[0], (std::vector<std::size_t>{3, 4, 0, 6, 5, 1, 2}));
  EXPECT_TRUE(plan.shards[1].empty());
  plan.shards = {{5, 4, 3, 2, 1, 0}};
  order_for_pruning(plan, group, m);
  EXPECT_EQ(plan.shards[0], (std::vector<std::size_t>{5, 4, 0, 1, 2, 3}));
}

// A worker tunes the first key the compile pool has finished, never before a key of its group
// that comes earlier in its list, and the first key when none is finished.
TEST(ParallelWarmup, AWorkerTunesTheFirstCompiledKeyAndKeepsEachGroupInOrder) {
  using tunebench::ready_key;
  // Keys 0..5; groups: 0 a, 1 b, 2 a, 3 c, 4 b, 5 d.
  const std::vector<std::string> group{"a", "b", "a", "c", "b", "d"};
  std::set<std::size_t> compiled;
  const auto ready = [&](std::size_t k) { return compiled.count(k) > 0; };
  const std::vector<std::size_t> left{0, 1, 2, 3, 4, 5};
  EXPECT_EQ(ready_key(left, group, ready), 0u);  // nothing compiled: the first, waited for
  compiled = {2, 4, 5};                          // 2 waits for 0 (group a), 4 for 1 (group b)
  EXPECT_EQ(ready_key(left, group, ready), 5u);
  compiled = {2, 3, 4, 5};
  EXPECT_EQ(ready_key(left, group, ready), 3u);
  compiled = {1, 2, 3};
  EXPECT_EQ(ready_key(left, group, ready), 1u);
  EXPECT_EQ(ready_key({2, 4}, group, ready), 0u);  // once 0 and 1 are tuned, 2 may go
  EXPECT_EQ(ready_key({4, 5}, group, ready), 0u);  // neither compiled: the first
}

TEST(ParallelWarmup, SweepCostCountsRunsAndFixedCostsNotJustFlops) {
  tunebench::TuneOptions o;  // 1 warmup, 3..15 repetitions within 100 ms
  // A 10 us kernel: 15 repetitions + 1 warmup of (10 + 100) us, plus 5 ms per config.
  const double decode = tunebench::sweep_cost_s(2e9, 0, 44, o, 200e12, 2e12);
  EXPECT_NEAR(decode, 44 * (16 * 110e-6 + 5e-3), 1e-9);
  // A 10 ms kernel: the budget allows 9 repetitions (floor of 100 / 10.1), plus the warmup.
  const double prefill = tunebench::sweep_cost_s(2e12, 0, 44, o, 200e12, 2e12);
  EXPECT_NEAR(prefill, 44 * (10 * (10e-3 + 100e-6) + 5e-3), 1e-9);
  // Cheap keys are not free: a decode key weighs a few percent of a prefill key, not 1/1000.
  EXPECT_GT(decode / prefill, 0.02);
  // Memory-bound: bytes set the run time when they take longer than the flops.
  EXPECT_GT(tunebench::sweep_cost_s(1, 2e9, 1, o, 200e12, 2e12), tunebench::sweep_cost_s(1, 0, 1, o, 200e12, 2e12));
  // At least one config is counted.
  EXPECT_EQ(tunebench::sweep_cost_s(0, 0, 0, o, 1, 1), tunebench::sweep_cost_s(0, 0, 1, o, 1, 1));
}
