// The BF16 grouped-GEMM baseline (bf16_moe) on a real device: both groupings match the float64
// reference on a decode and a prefill shape of every shipped set, it computes mxfp4_moe's
// product (same routing, same weights, same activations), and bad configs are errors.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16_moe.hpp"
#include "mxfp4.hpp"
#include "mxfp4_gpu.hpp"
#include "shape_dir.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/device.hpp"

namespace {

using tunebench::Config;
using tunebench::Shape;
using tunebench::bench::Bf16MoeOp;

constexpr double kTolerance = 1e-2;

class GpuBf16Moe : public ::testing::Test {
 protected:
  void SetUp() override {
    const tunebench::GpuProbe probe = tunebench::probe_gpus();
    if (!probe.available()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
    TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
    device_ = tunebench::query_device(0);
    stream_.emplace();
  }
  cudaStream_t stream() const { return stream_->get(); }

  const Bf16MoeOp op_;
  tunebench::DeviceInfo device_;

 private:
  std::optional<tunebench::Stream> stream_;
};

// ||a - b|| / ||b|| over BF16 bits.
double rel_diff(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = tunebench::mxfp4::bf16_to_float(a[i]), y = tunebench::mxfp4::bf16_to_float(b[i]);
    d += (x - y) * (x - y);
    n += y * y;
  }
  return std::sqrt(d / n);
}

TEST_F(GpuBf16Moe, BothGroupingsMatchTheFloat64ReferenceOnEverySet) {
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  ASSERT_EQ(shapes.size(), 8u);
  for (const auto& s : shapes) {
    auto work = op_.prepare(s, 1234);
    for (const auto& config : op_.config_space(tunebench::SpaceKind::kDefault)) {
      ASSERT_TRUE(op_.can_implement(config, s, device_));
      const tunebench::CheckResult r = op_.check(*work, config, stream());
      EXPECT_TRUE(r.passed(kTolerance)) << s.set << " " << s.gemm << " M=" << s.m << " [" << config.str()
                                        << "] rel_error " << r.rel_error << (r.all_finite ? "" : " NON-FINITE");
      EXPECT_EQ(r.checked, static_cast<std::size_t>(std::min<std::int64_t>(s.m * s.top_k, 64) * s.n));
      // The other routings run too (each with its own pointer arrays).
      for (std::size_t i = 0; i < work->variants(); ++i) op_.run(*work, config, stream());
      TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
    }
  }
}

TEST_F(GpuBf16Moe, ComputesMxfp4MoesProductForTheSameSeed) {
  const tunebench::bench::Mxfp4MoeOp mx(false);
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  ASSERT_FALSE(shapes.empty());
  for (const Shape& s : {shapes.front(), shapes.back()}) {  // EP decode w13, TP4 prefill w2
    auto bw = op_.prepare(s, 77);
    ASSERT_TRUE(op_.check(*bw, Config{{"MERGE_COUNTS", 1}}, stream()).passed(kTolerance));
    const auto ours = tunebench::bench::bf16_moe_output(*bw);
    auto mw = mx.prepare(s, 77);
    ASSERT_TRUE(mx.check(*mw, mx.default_config(s, device_), stream()).passed(kTolerance));
    const auto theirs = tunebench::bench::last_output(*mw);
    ASSERT_EQ(ours.size(), theirs.size());
    // Both accumulate the same BF16 products in fp32 and round to BF16: they differ by rounding.
    EXPECT_LT(rel_diff(ours, theirs), kTolerance) << s.set << " " << s.gemm << " M=" << s.m;
    // Another seed is another product: the comparison can fail.
    auto other = op_.prepare(s, 78);
    ASSERT_TRUE(op_.check(*other, Config{{"MERGE_COUNTS", 1}}, stream()).passed(kTolerance));
    EXPECT_GT(rel_diff(tunebench::bench::bf16_moe_output(*other), theirs), 0.5);
  }
}

TEST_F(GpuBf16Moe, ABadConfigIsAnErrorNotAPass) {
  const Shape s = tunebench::testing::decode_and_prefill_shapes().front();
  auto work = op_.prepare(s, 2);
  EXPECT_TRUE(op_.check(*work, Config{{"MERGE_COUNTS", 0}}, stream()).passed(kTolerance));
  EXPECT_THROW(op_.check(*work, Config{{"MERGE_COUNTS", 2}}, stream()), std::invalid_argument);
  EXPECT_THROW(op_.run(*work, Config{{"ALGO", 0}}, stream()), tunebench::ConfigError);
  // The failures leave the stream and the workload usable.
  EXPECT_TRUE(op_.check(*work, Config{{"MERGE_COUNTS", 1}}, stream()).passed(kTolerance));
}

}  // namespace
