// The host side of the grouped ops' BF16 baseline, without a GPU: the routing both grouped ops
// share, the grouped problem description cuBLAS gets from it, the counts, the registration and
// the baseline declaration.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "bf16_moe.hpp"
#include "moe_routing.hpp"
#include "mxfp4_gpu.hpp"
#include "ops.hpp"
#include "plan/family.hpp"
#include "shape_dir.hpp"

namespace {

using tunebench::Config;
using tunebench::Shape;
using namespace tunebench::bench;

Shape moe_shape(std::int64_t m, const std::string& gemm = "w13", std::int64_t experts = 256, std::int64_t top_k = 6) {
  return Shape{"test", gemm, m, 4096, 2048, experts, top_k, std::nullopt};
}

TEST(RouteTokens, EveryTokenGetsTopKDistinctExpertsAndSortedIsAPermutationInExpertOrder) {
  for (const std::int64_t m : {1, 7, 300}) {
    const Shape s = moe_shape(m, "w13", 16, 4);
    const MoeRouting r = route_tokens(s, 5);
    ASSERT_EQ(r.expert_count.size(), 16u);
    ASSERT_EQ(r.sorted.size(), static_cast<std::size_t>(m * 4));
    EXPECT_EQ(std::accumulate(r.expert_count.begin(), r.expert_count.end(), 0), m * 4);
    std::vector<int> seen(r.sorted);
    std::sort(seen.begin(), seen.end());
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], static_cast<int>(i));
    // Expert of each sorted position from the counts; within an expert, pairs ascending; a
    // token never twice with one expert.
    std::size_t pos = 0;
    for (int e = 0; e < 16; ++e) {
      std::set<int> tokens;
      for (int c = 0; c < r.expert_count[static_cast<std::size_t>(e)]; ++c, ++pos) {
        if (c > 0) {
          EXPECT_LT(r.sorted[pos - 1], r.sorted[pos]);
        }
        EXPECT_TRUE(tokens.insert(r.sorted[pos] / 4).second)
            << "token " << r.sorted[pos] / 4 << " twice with expert " << e;
      }
    }
  }
}

TEST(RouteTokens, DependsOnTheSeedOnlyAndRoutingSeedsDiffer) {
  const Shape s = moe_shape(64);
  EXPECT_EQ(route_tokens(s, 3).sorted, route_tokens(s, 3).sorted);
  EXPECT_NE(route_tokens(s, routing_seed(3, 0)).sorted, route_tokens(s, routing_seed(3, 1)).sorted);
  EXPECT_NE(routing_seed(3, 0), routing_seed(4, 0));
}

TEST(RouteTokens, BadGeometryIsAOneLineErrorNamingTheValues) {
  for (const Shape& bad : {moe_shape(8, "w13", 4, 5), moe_shape(0), moe_shape(8, "w13", 256, 0)}) {
    try {
      route_tokens(bad, 1);
      ADD_FAILURE() << "routed M=" << bad.m << " top_k=" << bad.top_k;
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("top_k=" + std::to_string(bad.top_k)), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(ARows, W13ReadsTheTokenAndW2ThePair) {
  const MoeRouting r = route_tokens(moe_shape(10, "w13", 8, 3), 2);
  const auto tokens = a_rows(r, false, 3), pairs = a_rows(r, true, 3);
  for (std::size_t i = 0; i < r.sorted.size(); ++i) {
    EXPECT_EQ(pairs[i], r.sorted[i]);
    EXPECT_EQ(tokens[i], r.sorted[i] / 3);
  }
  EXPECT_FALSE(pair_input(moe_shape(1, "w13")));
  EXPECT_TRUE(pair_input(moe_shape(1, "w2")));
}

TEST(ActiveGroups, PartitionTheSortedPairsAndLeaveOutIdleExperts) {
  const MoeRouting r = route_tokens(moe_shape(3), 9);  // 18 pairs over 256 experts: most idle
  const auto groups = active_groups(r);
  int next = 0;
  for (const auto& g : groups) {
    EXPECT_EQ(g.first, next);
    EXPECT_GT(g.count, 0);
    EXPECT_EQ(g.count, r.expert_count[static_cast<std::size_t>(g.expert)]);
    next += g.count;
  }
  EXPECT_EQ(next, 18);
  const auto active = std::count_if(r.expert_count.begin(), r.expert_count.end(), [](int c) { return c > 0; });
  EXPECT_EQ(groups.size(), static_cast<std::size_t>(active));
  for (std::size_t i = 1; i < groups.size(); ++i) EXPECT_LT(groups[i - 1].expert, groups[i].expert);
}

TEST(PlanGroupedGemm, OneGroupPerExpertOrOnePerDistinctCount) {
  const std::vector<ExpertGroup> groups{{2, 0, 3}, {5, 3, 1}, {7, 4, 3}, {9, 7, 2}, {11, 9, 1}};
  const GroupedGemmPlan each = plan_grouped_gemm(groups, false);
  EXPECT_EQ(each.problems, groups);
  EXPECT_EQ(each.group_rows, (std::vector<int>{3, 1, 3, 2, 1}));
  EXPECT_EQ(each.group_size, (std::vector<int>{1, 1, 1, 1, 1}));

  const GroupedGemmPlan merged = plan_grouped_gemm(groups, true);
  EXPECT_EQ(merged.group_rows, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(merged.group_size, (std::vector<int>{2, 1, 2}));
  const std::vector<ExpertGroup> order{{5, 3, 1}, {11, 9, 1}, {9, 7, 2}, {2, 0, 3}, {7, 4, 3}};
  EXPECT_EQ(merged.problems, order);
  // Every problem's count is its group's.
  std::size_t p = 0;
  for (std::size_t g = 0; g < merged.group_rows.size(); ++g) {
    for (int i = 0; i < merged.group_size[g]; ++i, ++p) EXPECT_EQ(merged.problems[p].count, merged.group_rows[g]);
  }
}

TEST(PlanGroupedGemm, ARealRoutingKeepsEveryPairOnceInBothGroupings) {
  const auto groups = active_groups(route_tokens(moe_shape(512), 4));
  for (const bool merge : {false, true}) {
    const GroupedGemmPlan plan = plan_grouped_gemm(groups, merge);
    EXPECT_EQ(std::accumulate(plan.group_size.begin(), plan.group_size.end(), 0),
              static_cast<int>(plan.problems.size()));
    std::vector<int> covered(512 * 6, 0);
    for (const auto& g : plan.problems) {
      for (int i = 0; i < g.count; ++i) ++covered[static_cast<std::size_t>(g.first + i)];
    }
    EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));
  }
  EXPECT_LT(plan_grouped_gemm(groups, true).group_rows.size(), groups.size());
}

TEST(PlanGroupedGemm, AnEmptyExpertIsAnError) {
  EXPECT_THROW(plan_grouped_gemm({{3, 0, 0}}, false), std::invalid_argument);
}

TEST(MoeCost, ActiveExpertsAndBytesFollowTheFormula) {
  // One token hits exactly top_k experts; many tokens hit nearly all.
  EXPECT_NEAR(expected_active_experts(256, 6, 1), 6.0, 1e-9);
  EXPECT_GT(expected_active_experts(256, 6, 4096), 255.99);
  EXPECT_LE(expected_active_experts(256, 6, 4096), 256.0);
  EXPECT_LT(expected_active_experts(256, 6, 8), expected_active_experts(256, 6, 64));
  EXPECT_LT(expected_active_experts(256, 6, 64), 256.0);
  const Shape w13 = moe_shape(8, "w13"), w2 = moe_shape(8, "w2");
  const double active = 256.0 * (1.0 - std::pow(250.0 / 256.0, 8.0));
  EXPECT_DOUBLE_EQ(moe_bytes(w13, 2.0), active * 2.0 * 4096 * 2048 + 2.0 * 8 * 2048 + 2.0 * 48 * 4096);
  EXPECT_DOUBLE_EQ(moe_bytes(w2, 2.0), active * 2.0 * 4096 * 2048 + 2.0 * 48 * 2048 + 2.0 * 48 * 4096);
  // The baseline and the MXFP4 op count the same problem; only the weights' bytes differ.
  const Bf16MoeOp bf16;
  const Mxfp4MoeOp mx(false);
  for (const Shape& s : {w13, w2}) {
    EXPECT_DOUBLE_EQ(bf16.flops(s), 2.0 * 48 * 4096 * 2048);
    EXPECT_DOUBLE_EQ(bf16.flops(s), mx.flops(s));
    EXPECT_DOUBLE_EQ(bf16.bytes(s) - mx.bytes(s), active * (2.0 - 0.53125) * 4096 * 2048);
  }
}

TEST(Bf16Moe, DescribesItselfAndIsMxfp4MoesBaseline) {
  const Bf16MoeOp op;
  EXPECT_EQ(op.name(), "bf16_moe");
  EXPECT_TRUE(op.routed());
  EXPECT_TRUE(op.needs_gpu());
  EXPECT_EQ(op.time_unit(), benchmark::kMicrosecond);
  EXPECT_TRUE(op.shape_rules().needs_moe);
  EXPECT_EQ(op.shape_rules().k_multiple, 32);
  EXPECT_EQ(op.kernel_version().rfind("cublas-", 0), 0u) << op.kernel_version();
  const auto space = op.config_space(tunebench::SpaceKind::kDefault);
  EXPECT_EQ(space, op.config_space(tunebench::SpaceKind::kExpanded));
  EXPECT_NE(op.kernel_version().find(",cublaslt-"), std::string::npos) << op.kernel_version();
  ASSERT_EQ(space.size(), 6u);
  EXPECT_EQ(space[0].str(), "MERGE_COUNTS=0");
  EXPECT_EQ(space[1].str(), "MERGE_COUNTS=1");
  for (std::size_t i = 2; i < space.size(); ++i) {
    EXPECT_EQ(space[i].str(), "PER_EXPERT=1,ALGO=" + std::to_string(i - 2));
  }
  const tunebench::DeviceInfo dev;
  for (const auto& c : space) EXPECT_TRUE(op.can_implement(c, moe_shape(16384), dev));
  EXPECT_FALSE(op.can_implement(Config{{"MERGE_COUNTS", 2}}, moe_shape(8), dev));
  EXPECT_FALSE(op.can_implement(Config{{"ALGO", 0}}, moe_shape(8), dev));
  EXPECT_FALSE(op.can_implement(Config{{"PER_EXPERT", 1}, {"ALGO", Bf16MoeOp::kPerExpertAlgos}}, moe_shape(8), dev));
  EXPECT_FALSE(op.can_implement(Config{{"PER_EXPERT", 0}, {"ALGO", 0}}, moe_shape(8), dev));
  // cuBLASLt needs every expert's rows 256-byte aligned: N and K multiples of 128.
  Shape odd = moe_shape(8);
  odd.k = 2048 + 32;
  EXPECT_FALSE(op.can_implement(Config{{"PER_EXPERT", 1}, {"ALGO", 0}}, odd, dev));
  EXPECT_TRUE(op.can_implement(Config{{"MERGE_COUNTS", 0}}, odd, dev));
  EXPECT_EQ(Mxfp4MoeOp(false).baseline(), "bf16_moe");
}

TEST(Bf16Moe, BadShapeIsAOneLineErrorBeforeTheDeviceIsTouched) {
  const Bf16MoeOp op;
  Shape no_moe = moe_shape(8);
  no_moe.experts = 0;
  no_moe.top_k = 0;
  Shape bad_k = moe_shape(8);
  bad_k.k = 100;
  for (const Shape& s : {no_moe, bad_k}) {
    try {
      op.prepare(s, 1);
      ADD_FAILURE() << "prepared K=" << s.k << " E=" << s.experts;
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("K=" + std::to_string(s.k)), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// Every built-in op's baseline is itself built in, routed as the op is, and bf16_moe has a
// family beside each of mxfp4_moe's on the shipped sets.
TEST(Bf16Moe, RegisteredBesideMxfp4MoeOnEveryShippedShape) {
  const auto ops = builtin_ops();
  for (const auto& op : ops) {
    if (op->baseline().empty()) continue;
    const auto base = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o->name() == op->baseline(); });
    ASSERT_NE(base, ops.end()) << op->name() << "'s baseline " << op->baseline() << " is not built in";
    EXPECT_EQ((*base)->routed(), op->routed()) << op->name();
  }
  const auto families =
      tunebench::make_families(ops, tunebench::load_shape_path(tunebench::testing::shipped_shape_dir()));
  std::set<std::string> moe, bf16;
  for (const auto& f : families) {
    if (f.name.rfind("mxfp4_moe/", 0) == 0) moe.insert(f.name.substr(10));
    if (f.name.rfind("bf16_moe/", 0) == 0) bf16.insert(f.name.substr(9));
  }
  EXPECT_FALSE(moe.empty());
  EXPECT_EQ(moe, bf16);
}

}  // namespace
