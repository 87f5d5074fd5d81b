#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "cpu_mxfp4_gemm.hpp"

namespace mx = tunebench::mxfp4;
using tunebench::bench::cpu_mxfp4_gemm;
using tunebench::bench::make_gemm_inputs;

namespace {

// Plain float64 GEMM of the same dequantized operands; also returns sum |x||w| per output,
// the scale of float32 accumulation error.
void reference(const tunebench::bench::GemmInputs& in, std::vector<double>& y, std::vector<double>& mag) {
  std::vector<float> w(static_cast<std::size_t>(in.n * in.k));
  mx::dequantize(in.w, 0, in.n, 0, in.k, w.data(), in.k);
  y.assign(static_cast<std::size_t>(in.m * in.n), 0.0);
  mag.assign(y.size(), 0.0);
  for (std::int64_t i = 0; i < in.m; ++i) {
    for (std::int64_t j = 0; j < in.n; ++j) {
      double s = 0, a = 0;
      for (std::int64_t t = 0; t < in.k; ++t) {
        const double p = static_cast<double>(mx::bf16_to_float(in.x[i * in.k + t])) * w[j * in.k + t];
        s += p;
        a += std::fabs(p);
      }
      y[i * in.n + j] = s;
      mag[i * in.n + j] = a;
    }
  }
}

}  // namespace

TEST(CpuMxfp4Gemm, MatchesFloat64GemmForEveryTiling) {
  const auto in = make_gemm_inputs(5, 96, 256, 7);
  std::vector<double> ref, mag;
  reference(in, ref, mag);
  for (std::int64_t bn : {1, 16, 64, 96, 200}) {
    for (std::int64_t bk : {32, 96, 256, 512}) {
      std::vector<std::uint16_t> y(ref.size(), 0xFFFF);
      cpu_mxfp4_gemm(in.x.data(), in.w, y.data(), in.m, bn, bk);
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double got = mx::bf16_to_float(y[i]);
        // BF16 rounding of the result plus float32 accumulation over K terms.
        const double tol = std::ldexp(std::fabs(ref[i]), -8) + 256 * 0x1p-24 * mag[i];
        ASSERT_LE(std::fabs(got - ref[i]), tol)
            << "BLOCK_N=" << bn << " BLOCK_K=" << bk << " at " << i << ": " << got << " vs " << ref[i];
      }
    }
  }
}

TEST(CpuMxfp4Gemm, RejectsBadTiles) {
  const auto in = make_gemm_inputs(1, 32, 64, 1);
  std::vector<std::uint16_t> y(32);
  EXPECT_THROW(cpu_mxfp4_gemm(in.x.data(), in.w, y.data(), 1, 16, 48), std::invalid_argument);
  EXPECT_THROW(cpu_mxfp4_gemm(in.x.data(), in.w, y.data(), 1, 0, 32), std::invalid_argument);
}

TEST(CpuMxfp4Gemm, InputsAreDeterministicAndScalesVary) {
  const auto a = make_gemm_inputs(2, 64, 128, 42);
  const auto b = make_gemm_inputs(2, 64, 128, 42);
  const auto c = make_gemm_inputs(2, 64, 128, 43);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.w.codes, b.w.codes);
  EXPECT_EQ(a.w.scales, b.w.scales);
  EXPECT_NE(a.w.codes, c.w.codes);
  std::set<std::uint8_t> scales(a.w.scales.begin(), a.w.scales.end());
  EXPECT_GE(scales.size(), 8u);
}

TEST(CpuMxfp4GemmOp, ConfigSpaceAndCanImplement) {
  const tunebench::bench::CpuMxfp4GemmOp op;
  const auto dev = tunebench::sm90_reference_device();
  const auto def = op.config_space(tunebench::SpaceKind::kDefault);
  const auto exp = op.config_space(tunebench::SpaceKind::kExpanded);
  EXPECT_EQ(def.size(), 9u);
  EXPECT_GT(exp.size(), def.size());
  tunebench::Shape small{"s", "w2", 1, 4096, 512, 256, 6, std::nullopt};
  EXPECT_FALSE(op.can_implement(tunebench::Config{{"BLOCK_N", 16}, {"BLOCK_K", 1024}}, small, dev));
  EXPECT_TRUE(op.can_implement(tunebench::Config{{"BLOCK_N", 16}, {"BLOCK_K", 256}}, small, dev));
  EXPECT_EQ(op.default_config(small, dev).str(), "BLOCK_N=16,BLOCK_K=128");
  const tunebench::Shape tiny{"s", "w", 1, 8, 64, 8, 2, std::nullopt};  // smaller than any tile
  EXPECT_EQ(op.default_config(tiny, dev).str(), "BLOCK_N=16,BLOCK_K=128");
  EXPECT_DOUBLE_EQ(op.flops(small), 2.0 * 4096 * 512);
  EXPECT_DOUBLE_EQ(op.bytes(small), 0.53125 * 4096 * 512 + 2 * 512 + 2 * 4096);

  auto work = op.prepare({"s", "w", 3, 64, 128, 8, 2, std::nullopt}, 1);
  EXPECT_NO_THROW(op.run(*work, tunebench::Config{{"BLOCK_N", 16}, {"BLOCK_K", 64}}, nullptr));
  EXPECT_THROW(op.run(*work, tunebench::Config{{"BLOCK_N", 16}}, nullptr), tunebench::ConfigError);
}
