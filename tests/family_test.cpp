#include <gtest/gtest.h>

#include <memory>

#include "cpu_mxfp4_gemm.hpp"
#include "plan/family.hpp"

namespace {

// A routed op, to check that E and topk enter the name; it is never run.
class FakeMoeOp final : public tunebench::Op {
 public:
  std::string name() const override { return "fake_moe"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return true; }
  bool routed() const override { return true; }
  std::string kernel_version() const override { return "fake-1"; }
  std::vector<tunebench::Config> config_space(tunebench::SpaceKind) const override { return {{}}; }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape&, std::uint64_t) const override {
    return nullptr;
  }
  void run(tunebench::Workload&, const tunebench::Config&, cudaStream_t) const override {}
  double flops(const tunebench::Shape&) const override { return 0; }
  double bytes(const tunebench::Shape&) const override { return 0; }
};

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
  const tunebench::OpList ops{std::make_shared<FakeMoeOp>(),
                              std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
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
  const auto [bw, flops] = tunebench::roofline_peaks("NVIDIA H200");
  EXPECT_DOUBLE_EQ(bw, 4243e9);
  EXPECT_DOUBLE_EQ(flops, 790e12);
  EXPECT_EQ(tunebench::roofline_peaks("NVIDIA A100-SXM4-80GB"), std::make_pair(0.0, 0.0));
}
