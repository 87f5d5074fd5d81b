// The cuBLASLt BF16 baseline on a real device: every algorithm the heuristic offers matches the
// float64 reference, and configs it cannot run are errors, never passes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "bf16_gemm.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/device.hpp"

namespace {

using tunebench::Config;
using tunebench::Shape;
using tunebench::bench::Bf16GemmOp;

struct Dims {
  std::int64_t m, n, k;
};
void PrintTo(const Dims& d, std::ostream* os) { *os << "M=" << d.m << " N=" << d.n << " K=" << d.k; }

Shape make_shape(const Dims& d) { return Shape{"test", "gemm", d.m, d.n, d.k, 1, 1, std::nullopt}; }

Config algo(std::int64_t i) { return Config{{"ALGO", i}}; }

// Skips, with the probe's reason, where there is no usable CUDA device.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const tunebench::GpuProbe probe = tunebench::probe_gpus();
    if (!probe.available()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
    TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
    stream_.emplace();
  }
  cudaStream_t stream() const { return stream_->get(); }

  const Bf16GemmOp op_;

 private:
  std::optional<tunebench::Stream> stream_;
};

class GpuBf16GemmShapes : public GpuTest, public ::testing::WithParamInterface<Dims> {};

TEST_P(GpuBf16GemmShapes, EveryOfferedAlgoMatchesTheFloat64Reference) {
  const Dims d = GetParam();
  auto work = op_.prepare(make_shape(d), 3);
  const int offered = op_.offered_algos(*work);
  ASSERT_GT(offered, 0) << "cuBLASLt offered no algorithm";
  ASSERT_LE(offered, Bf16GemmOp::kRequestedAlgos);
  for (int i = 0; i < offered; ++i) {
    // Twice each, so the second run reads another copy of W than the first.
    for (int rep = 0; rep < 2; ++rep) {
      const tunebench::CheckResult r = op_.check(*work, algo(i), stream());
      EXPECT_TRUE(r.all_finite) << "ALGO=" << i;
      EXPECT_LE(r.rel_error, 1e-2) << "ALGO=" << i;
      EXPECT_TRUE(r.passed(1e-2)) << "ALGO=" << i;
      EXPECT_EQ(r.checked, static_cast<std::size_t>(std::min<std::int64_t>(d.m, 64) * d.n));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuBf16GemmShapes,
                         ::testing::Values(Dims{8, 4096, 4096}, Dims{16, 1024, 4096}, Dims{512, 4096, 512}),
                         [](const ::testing::TestParamInfo<Dims>& p) {
                           return "M" + std::to_string(p.param.m) + "_N" + std::to_string(p.param.n) + "_K" +
                                  std::to_string(p.param.k);
                         });

using GpuBf16Gemm = GpuTest;

TEST_F(GpuBf16Gemm, AlgoBeyondTheOfferedCountThrowsSayingHowMany) {
  auto work = op_.prepare(make_shape({16, 1024, 4096}), 1);
  const int offered = op_.offered_algos(*work);
  for (const std::int64_t bad : {static_cast<std::int64_t>(offered), std::int64_t{-1}}) {
    try {
      op_.run(*work, algo(bad), stream());
      ADD_FAILURE() << "ALGO=" << bad << " ran";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("offered " + std::to_string(offered) + " algorithms"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_THROW(op_.run(*work, Config{{"BLOCK_N", 16}}, stream()), tunebench::ConfigError);
}

TEST_F(GpuBf16Gemm, AConfigThatCannotRunIsAnErrorNotAPass) {
  auto work = op_.prepare(make_shape({8, 4096, 4096}), 2);
  const int offered = op_.offered_algos(*work);
  ASSERT_GT(offered, 0);
  // A good run first, so Y holds a correct result that a failed run must not be credited with.
  EXPECT_TRUE(op_.check(*work, algo(0), stream()).passed(1e-2));
  EXPECT_THROW(op_.check(*work, algo(offered), stream()), std::runtime_error);
  // The failure leaves the stream and the workload usable.
  EXPECT_TRUE(op_.check(*work, algo(0), stream()).passed(1e-2));
}

TEST_F(GpuBf16Gemm, DescribesItself) {
  EXPECT_EQ(op_.name(), "bf16_gemm");
  EXPECT_EQ(op_.time_unit(), benchmark::kMicrosecond);
  EXPECT_TRUE(op_.needs_gpu());
  EXPECT_FALSE(op_.routed());
  const auto def = op_.config_space(tunebench::SpaceKind::kDefault);
  EXPECT_EQ(def, op_.config_space(tunebench::SpaceKind::kExpanded));
  ASSERT_EQ(def.size(), 8u);
  EXPECT_EQ(def.front().str(), "ALGO=0");
  EXPECT_EQ(def.back().str(), "ALGO=7");
  const Shape s = make_shape({8, 4096, 512});
  EXPECT_DOUBLE_EQ(op_.flops(s), 2.0 * 8 * 4096 * 512);
  EXPECT_DOUBLE_EQ(op_.bytes(s), 2.0 * 4096 * 512 + 2.0 * 8 * 512 + 2.0 * 8 * 4096);
}

}  // namespace
