#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu_mxfp4_gemm.hpp"
#include "gemm_cost.hpp"
#include "plan/family.hpp"

namespace {

// An op that is never run: only its name, kind and shape rules matter to families.
class FakeOp : public tunebench::Op {
 public:
  FakeOp(std::string name, bool routed, std::optional<tunebench::ShapeRules> rules = std::nullopt)
      : name_(std::move(name)), routed_(routed), rules_(std::move(rules)) {}
  std::string name() const override { return name_; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return routed_; }
  bool routed() const override { return routed_; }
  tunebench::ShapeRules shape_rules() const override { return rules_ ? *rules_ : Op::shape_rules(); }
  std::string kernel_version() const override { return "fake-1"; }
  std::vector<tunebench::Config> config_space(tunebench::SpaceKind) const override { return {{}}; }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape&, std::uint64_t) const override {
    return nullptr;
  }
  void run(tunebench::Workload&, const tunebench::Config&, cudaStream_t) const override {}
  double flops(const tunebench::Shape&) const override { return 0; }
  double bytes(const tunebench::Shape&) const override { return 0; }

 private:
  std::string name_;
  bool routed_;
  std::optional<tunebench::ShapeRules> rules_;
};

// A routed op, to check that E and topk enter the name.
struct FakeMoeOp final : FakeOp {
  FakeMoeOp() : FakeOp("fake_moe", true) {}
};

// A plain (not routed) op with the shape rules it is given.
struct FakePlainOp final : FakeOp {
  explicit FakePlainOp(tunebench::ShapeRules rules = {}) : FakeOp("fake_plain", false, std::move(rules)) {}
};

// A routed op whose rules forget to ask for the geometry: routed() asks for it anyway.
struct ForgetfulMoeOp final : FakeOp {
  ForgetfulMoeOp() : FakeOp("forgetful_moe", true, tunebench::ShapeRules{}) {}
};

// A set as a shape file without `moe:` gives it: experts and top_k 0.
tunebench::ShapeSet make_plain_set(const std::string& name, std::int64_t k) {
  tunebench::ShapeSet set;
  set.name = name;
  set.shapes.push_back({name, "w13", 8, 4096, k, 0, 0, std::nullopt});
  return set;
}

tunebench::ShapeSet make_set(const std::string& name) {
  tunebench::ShapeSet set;
  set.name = name;
  set.shapes.push_back({name, "w13", 8, 4096, 4096, 256, 6, 172});
  set.shapes.push_back({name, "w2", 8, 4096, 2048, 256, 6, std::nullopt});
  return set;
}

}  // namespace

TEST(FamilyName, IsOpSetAndShape) {
  const auto set = make_set("dsv4f_decode_ep");
  EXPECT_EQ(tunebench::family_name(FakeMoeOp(), set.shapes[0]),
            "fake_moe/dsv4f_decode_ep/M:8/N:4096/K:4096/E:256/topk:6");
  EXPECT_EQ(tunebench::family_name(tunebench::bench::CpuMxfp4GemmOp(), set.shapes[1]),
            "cpu_mxfp4_gemm/dsv4f_decode_ep/M:8/N:4096/K:2048");
}

TEST(FamilyName, DoesNotDependOnOrderOrOtherSets) {
  const tunebench::OpList ops{std::make_shared<FakeMoeOp>(), std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  const tunebench::OpList reversed{ops[1], ops[0]};
  const auto a = tunebench::make_families(ops, {make_set("x"), make_set("y")});
  const auto b = tunebench::make_families(reversed, {make_set("y")});
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 4u);
  for (const auto& fb : b) {
    const bool found = std::any_of(a.begin(), a.end(), [&](const auto& fa) {
      return fa.name == fb.name && fa.op == fb.op && fa.shape.m == fb.shape.m;
    });
    EXPECT_TRUE(found) << fb.name;
  }
  EXPECT_EQ(tunebench::reported_name(a[0]), a[0].name + "/manual_time");
}

TEST(FamilyName, CollisionIsAnError) {
  const tunebench::OpList ops{std::make_shared<FakeMoeOp>(), std::make_shared<FakeMoeOp>()};
  EXPECT_THROW(tunebench::make_families(ops, {make_set("x")}), std::invalid_argument);
}

TEST(Roofline, PeaksAreTheMeasuredH200OnesAndUnknownElsewhere) {
  const auto [bw, flops] = tunebench::bench::roofline_peaks("NVIDIA H200");
  EXPECT_DOUBLE_EQ(bw, 4243e9);
  EXPECT_DOUBLE_EQ(flops, 790e12);
  EXPECT_EQ(tunebench::bench::roofline_peaks("NVIDIA A100-SXM4-80GB"), std::make_pair(0.0, 0.0));
}

TEST(MakeFamilies, ARoutedOpHasNoFamiliesOnASetWithoutMoeAndTheOthersRun) {
  tunebench::ShapeRules needs_moe;
  needs_moe.needs_moe = true;
  const tunebench::OpList ops{std::make_shared<FakeMoeOp>(), std::make_shared<ForgetfulMoeOp>(),
                              std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  const auto families = tunebench::make_families(ops, {make_plain_set("plain", 4096), make_set("routed")});
  std::vector<std::string> names;
  for (const auto& f : families) names.push_back(f.name);
  const std::vector<std::string> expect{"fake_moe/routed/M:8/N:4096/K:4096/E:256/topk:6",
                                        "fake_moe/routed/M:8/N:4096/K:2048/E:256/topk:6",
                                        "forgetful_moe/routed/M:8/N:4096/K:4096/E:256/topk:6",
                                        "forgetful_moe/routed/M:8/N:4096/K:2048/E:256/topk:6",
                                        "cpu_mxfp4_gemm/plain/M:8/N:4096/K:4096",
                                        "cpu_mxfp4_gemm/routed/M:8/N:4096/K:4096",
                                        "cpu_mxfp4_gemm/routed/M:8/N:4096/K:2048"};
  EXPECT_EQ(names, expect);
  // A plain op that reads the geometry (as hbm_read of mxfp4_moe would) is left out likewise.
  EXPECT_TRUE(
      tunebench::make_families({std::make_shared<FakePlainOp>(needs_moe)}, {make_plain_set("plain", 64)}).empty());
  // Nothing but sets without `moe:` and routed ops: no families, not an error.
  EXPECT_TRUE(tunebench::make_families({std::make_shared<FakeMoeOp>()}, {make_plain_set("plain", 64)}).empty());
}

TEST(MakeFamilies, AnOpWithoutAKRuleAcceptsK100AndTheMxfp4OpStopsOnIt) {
  const auto families = tunebench::make_families({std::make_shared<FakePlainOp>()}, {make_plain_set("odd", 100)});
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "fake_plain/odd/M:8/N:4096/K:100");
  try {
    tunebench::make_families({std::make_shared<FakePlainOp>(), std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()},
                             {make_plain_set("odd", 100)});
    FAIL() << "cpu_mxfp4_gemm accepted K=100";
  } catch (const tunebench::ShapeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "shape set 'odd': gemm 'w13': K=100 is not a multiple of 32 (the MXFP4 block size)");
  }
}
