#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <memory>

#include "device_inputs.hpp"
#include "inputs.hpp"
#include "mxfp4_gpu.hpp"
#include "mxfp4_gpu_internal.hpp"
#include "shape_dir.hpp"
#include "tunebench/device.hpp"
#include "tunebench/shape.hpp"

namespace {

using tunebench::Config;
using tunebench::Shape;

// BF16 output: each element carries ~2^-9 relative rounding; the norm-wise error of a correct
// kernel sits near 2e-3, a wrong one at >= 1e-1.
constexpr double kTolerance = 1e-2;

// Scales 2^-27 .. 2^13: wider than trained weights, so that FOLDSCALE's fallback path for
// scales above 2 (E8M0 > 128) runs too.
constexpr std::uint8_t kScaleLo = 100, kScaleHi = 140;
// The largest E8M0 code whose folded factor 2^(s-1) still fits bf16 (FOLDSCALE's fast path).
constexpr std::uint8_t kFoldableScaleHi = 128;

class GpuMxfp4 : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto probe = tunebench::probe_gpus();
    if (!probe.available()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
    device_ = tunebench::query_device(0);
    stream_ = std::make_unique<tunebench::Stream>();
  }

  // Every config of `space` (all of it, or those `keep` selects) that can run `shape` passes
  // the check; returns how many ran.
  int check_all(const tunebench::bench::Mxfp4GpuOp& op, const Shape& shape,
                tunebench::SpaceKind space = tunebench::SpaceKind::kDefault,
                bool (*keep)(const tunebench::Config&) = nullptr) {
    auto work = op.prepare(shape, 1234);
    int ran = 0;
    for (const auto& config : op.config_space(space)) {
      if ((keep && !keep(config)) || !op.can_implement(config, shape, device_)) continue;
      const auto r = op.check(*work, config, stream_->get());
      EXPECT_TRUE(r.passed(kTolerance)) << op.name() << " " << shape.set << " " << shape.gemm << " M=" << shape.m
                                        << " [" << config.str() << "] rel_error " << r.rel_error
                                        << (r.all_finite ? "" : " NON-FINITE");
      ++ran;
    }
    EXPECT_GT(ran, 0) << shape.set << " " << shape.gemm;
    return ran;
  }

  tunebench::DeviceInfo device_;
  std::unique_ptr<tunebench::Stream> stream_;
};

}  // namespace

TEST_F(GpuMxfp4, DenseEveryDefaultConfigMatchesTheCpuReference) {
  const tunebench::bench::Mxfp4GemmOp op(false, kScaleLo, kScaleHi);
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  ASSERT_EQ(shapes.size(), 8u);
  for (const auto& s : shapes) check_all(op, s);
  Shape odd = shapes[0];
  odd.m = 37;  // rows not a multiple of any BLOCK_M
  check_all(op, odd);
}

// The decode family beyond the default space (BLOCK_M 16, 32 warps, SPLIT_K 2 and 4, the ring
// with 1 and 2 stages at every width), which exhaustive search and replays can run, at the edges
// of its M range and at M not a multiple of 8; and the dequantize family just above its M
// threshold, at K = 4096 and at a K that is not a multiple of its blocks' 256 columns.
TEST_F(GpuMxfp4, DenseExpandedDecodeAndDequantizeConfigsMatchTheCpuReference) {
  using tunebench::bench::Mxfp4GpuOp;
  const tunebench::bench::Mxfp4GemmOp op(false, kScaleLo, kScaleHi);
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  ASSERT_FALSE(shapes.empty());
  for (const std::int64_t n : {4096, 1024}) {
    for (const std::int64_t m : {std::int64_t{1}, std::int64_t{13}, Mxfp4GpuOp::kDecodeMaxRows}) {
      Shape s = shapes[0];
      s.m = m;
      s.n = n;
      s.k = 4096;
      EXPECT_GT(check_all(op, s, tunebench::SpaceKind::kExpanded, tunebench::bench::is_decode_config), 0);
    }
  }
  Shape s = shapes[0];
  s.m = Mxfp4GpuOp::kDequantMinRows + 1;
  s.n = 1024;
  for (const std::int64_t k : {4096, 160}) {
    s.k = k;
    EXPECT_GT(check_all(op, s, tunebench::SpaceKind::kExpanded, tunebench::bench::is_dequant_config), 0);
  }
}

TEST_F(GpuMxfp4, MoeEveryDefaultConfigMatchesTheCpuReference) {
  const tunebench::bench::Mxfp4MoeOp op(false, kScaleLo, kScaleHi);
  for (const auto& s : tunebench::testing::decode_and_prefill_shapes()) check_all(op, s);
}

// The grouped op's decode family beyond the default space (BLOCK_M 16, 32 warps, SPLIT_K 2 and
// 4 through the pairs' fp32 workspace, the ring with 1 stage), on a TP4 w13 geometry.
TEST_F(GpuMxfp4, MoeExpandedDecodeConfigsMatchTheCpuReference) {
  const tunebench::bench::Mxfp4MoeOp op(false, kScaleLo, kScaleHi);
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  ASSERT_FALSE(shapes.empty());
  for (const std::int64_t m : {std::int64_t{1}, std::int64_t{13}, tunebench::bench::Mxfp4GpuOp::kDecodeMaxRows}) {
    Shape s = shapes[0];
    s.m = m;
    s.n = 1024;
    s.k = 4096;
    EXPECT_GT(check_all(op, s, tunebench::SpaceKind::kExpanded, tunebench::bench::is_decode_config), 0);
  }
}

// Every config of the wgmma family, FOLDSCALE off and on, on small geometries that reach all
// of its paths: dense M = 128 (the smallest it runs: one block row, half of a 256-row block
// empty), 300 (the last piece partly filled) and 512; grouped with 8 experts, top-2, M = 512 (about 128 pairs a tile:
// tiles of several pieces, full and partial) in both the w13 (token rows) and w2 (pair rows) geometries. The default
// space's wgmma configs run on the real decode and prefill shapes in the *EveryDefaultConfig*
// tests.
TEST_F(GpuMxfp4, WgmmaConfigsMatchTheCpuReference) {
  using tunebench::bench::is_wgmma_config;
  if (device_.cc_major != 9 || device_.cc_minor != 0) GTEST_SKIP() << "wgmma (sm_90a) needs compute capability 9.0";
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  std::vector<Shape> dense_shapes, moe_shapes;
  for (const auto& s : shapes) {
    if (s.set.find("prefill_ep") == std::string::npos) continue;
    Shape small = s;
    small.n = 1024;
    small.k = 1024;
    small.m = 512;
    small.experts = 8;
    small.top_k = 2;
    moe_shapes.push_back(small);
    if (s.gemm != "w13") continue;
    for (const std::int64_t m : {tunebench::bench::Mxfp4GpuOp::kWgmmaMinRows, std::int64_t{300}, std::int64_t{512}}) {
      small.m = m;
      dense_shapes.push_back(small);
    }
  }
  ASSERT_EQ(moe_shapes.size(), 2u);
  for (bool fold : {false, true}) {
    const tunebench::bench::Mxfp4GemmOp dense(fold, kScaleLo, kScaleHi);
    const tunebench::bench::Mxfp4MoeOp moe(fold, kScaleLo, kScaleHi);
    for (const tunebench::bench::Mxfp4GpuOp* op : {static_cast<const tunebench::bench::Mxfp4GpuOp*>(&dense),
                                                   static_cast<const tunebench::bench::Mxfp4GpuOp*>(&moe)}) {
      std::vector<Config> configs;
      for (const auto& c : op->config_space(tunebench::SpaceKind::kExpanded)) {
        if (is_wgmma_config(c)) configs.push_back(c);
      }
      ASSERT_FALSE(configs.empty());
      op->precompile(configs, device_, 16);
      for (const auto& s : op == &dense ? dense_shapes : moe_shapes) {
        EXPECT_EQ(check_all(*op, s, tunebench::SpaceKind::kExpanded, is_wgmma_config), static_cast<int>(configs.size()))
            << op->name() << " " << s.gemm << " M=" << s.m << ": every wgmma config runs these shapes";
      }
    }
  }
}

// Every config of the warp-specialized wgmma family, FOLDSCALE off and on, on geometries that
// reach all of its paths: dense N = 1024, K = 2048 (so that every SPLIT_K, up to 8 x 256, divides
// K) at M = 32 (its smallest), 100 (a partial block row and partial pieces) and 300; grouped
// with 8 experts, top-2, M = 512 in the w13 and w2 geometries (tiles of several pieces, full and
// partial, and split-K sums into the pairs' rows).
TEST_F(GpuMxfp4, WarpSpecializedWgmmaConfigsMatchTheCpuReference) {
  using tunebench::bench::is_wgmma_ws_config;
  if (device_.cc_major != 9 || device_.cc_minor != 0) GTEST_SKIP() << "wgmma (sm_90a) needs compute capability 9.0";
  const auto shapes = tunebench::testing::decode_and_prefill_shapes();
  std::vector<Shape> dense_shapes, moe_shapes;
  for (const auto& s : shapes) {
    if (s.set.find("prefill_ep") == std::string::npos) continue;
    Shape small = s;
    small.n = 1024;
    small.k = 2048;
    small.m = 512;
    small.experts = 8;
    small.top_k = 2;
    moe_shapes.push_back(small);
    if (s.gemm != "w13") continue;
    for (const std::int64_t m : {tunebench::bench::Mxfp4GpuOp::kWgmmaWsMinRows, std::int64_t{100}, std::int64_t{300}}) {
      small.m = m;
      dense_shapes.push_back(small);
    }
  }
  ASSERT_EQ(moe_shapes.size(), 2u);
  for (bool fold : {false, true}) {
    const tunebench::bench::Mxfp4GemmOp dense(fold, kScaleLo, kScaleHi);
    const tunebench::bench::Mxfp4MoeOp moe(fold, kScaleLo, kScaleHi);
    for (const tunebench::bench::Mxfp4GpuOp* op : {static_cast<const tunebench::bench::Mxfp4GpuOp*>(&dense),
                                                   static_cast<const tunebench::bench::Mxfp4GpuOp*>(&moe)}) {
      std::vector<Config> configs;
      for (const auto& c : op->config_space(tunebench::SpaceKind::kExpanded)) {
        if (is_wgmma_ws_config(c)) configs.push_back(c);
      }
      ASSERT_FALSE(configs.empty());
      op->precompile(configs, device_, 16);
      for (const auto& s : op == &dense ? dense_shapes : moe_shapes) {
        EXPECT_EQ(check_all(*op, s, tunebench::SpaceKind::kExpanded, is_wgmma_ws_config),
                  static_cast<int>(configs.size()))
            << op->name() << " " << s.gemm << " M=" << s.m << ": every warp-specialized wgmma config runs these shapes";
      }
    }
  }
}

// SCALE_VOTE=1 gives SCALE_VOTE=0's bits, with scale codes 0..140: code 0 (the subnormal
// 2^-127) sends about a fifth of the groups down the vote's general branch under FOLDSCALE=0,
// codes above 128 most of them under FOLDSCALE=1, so both branches run in both variants.
TEST_F(GpuMxfp4, DecodeScaleVoteIsBitIdenticalWithEveryScaleCode) {
  for (bool fold : {false, true}) {
    for (bool moe : {false, true}) {
      std::unique_ptr<tunebench::bench::Mxfp4GpuOp> op;
      if (moe) {
        op = std::make_unique<tunebench::bench::Mxfp4MoeOp>(fold, 0, 140);
      } else {
        op = std::make_unique<tunebench::bench::Mxfp4GemmOp>(fold, 0, 140);
      }
      Shape s = tunebench::testing::decode_and_prefill_shapes()[0];
      s.m = 8;
      s.n = 1024;
      s.k = 4096;
      auto work = op->prepare(s, 7);
      int compared = 0;
      for (const auto& config : op->config_space(tunebench::SpaceKind::kDefault)) {
        // Every voting register-path config (BLOCK_N 32 included) against its twin without the vote.
        if (!tunebench::bench::is_decode_config(config) || config.get("SCALE_VOTE") != 1 || config.get("STAGES") != 0 ||
            !op->can_implement(config, s, device_)) {
          continue;
        }
        std::vector<tunebench::Config::Param> p = config.params();
        for (auto& kv : p) {
          if (kv.first == "SCALE_VOTE") kv.second = 0;
        }
        const tunebench::Config& voting = config;
        const tunebench::Config plain_config(p);
        ASSERT_TRUE(op->check(*work, plain_config, stream_->get()).passed(kTolerance)) << plain_config.str();
        const auto plain = tunebench::bench::last_output(*work);
        ASSERT_TRUE(op->check(*work, voting, stream_->get()).passed(kTolerance)) << voting.str();
        const auto voted = tunebench::bench::last_output(*work);
        ASSERT_EQ(plain.size(), voted.size());
        EXPECT_EQ(std::memcmp(plain.data(), voted.data(), plain.size() * 2), 0)
            << (moe ? "moe" : "dense") << " FOLDSCALE=" << fold << " [" << voting.str() << "]";
        ++compared;
      }
      EXPECT_GT(compared, 0);
    }
  }
}

// FOLDSCALE=1 passes the reference check and its output equals FOLDSCALE=0's bit for bit, on
// one workload (same weights and inputs) and split-K 1 (no atomics to reorder the sums).
// Twice: with scales 100..140, where most atoms and groups hold a scale above 2 and so take
// the fold's fallback (two multiplies), and, on the decode sets, with 100..128, where every
// atom and group can fold (one multiply): both paths must give FOLDSCALE=0's bits.
TEST_F(GpuMxfp4, FoldScaleIsCorrectAndBitIdentical) {
  struct Pass {
    std::uint8_t lo, hi;
    bool prefill;
  };
  for (const Pass pass : {Pass{kScaleLo, kScaleHi, true}, Pass{kScaleLo, kFoldableScaleHi, false}}) {
    for (bool moe : {false, true}) {
      std::unique_ptr<tunebench::bench::Mxfp4GpuOp> plain, folded;
      if (moe) {
        plain = std::make_unique<tunebench::bench::Mxfp4MoeOp>(false, pass.lo, pass.hi);
        folded = std::make_unique<tunebench::bench::Mxfp4MoeOp>(true, pass.lo, pass.hi);
      } else {
        plain = std::make_unique<tunebench::bench::Mxfp4GemmOp>(false, pass.lo, pass.hi);
        folded = std::make_unique<tunebench::bench::Mxfp4GemmOp>(true, pass.lo, pass.hi);
      }
      for (const auto& s : tunebench::testing::decode_and_prefill_shapes()) {
        if (s.set != "dsv4f_decode_tp4" && !(pass.prefill && s.set == "dsv4f_prefill_ep")) continue;
        auto work = plain->prepare(s, 99);
        int compared = 0;
        for (const auto& config : plain->config_space(tunebench::SpaceKind::kDefault)) {
          if (!plain->can_implement(config, s, device_)) continue;
          const auto r = folded->check(*work, config, stream_->get());
          EXPECT_TRUE(r.passed(kTolerance)) << "FOLDSCALE=1 " << s.set << " [" << config.str() << "] " << r.rel_error;
          if (tunebench::bench::is_dequant_config(config) || config.get("SPLIT_K") != 1) continue;
          const auto yb = tunebench::bench::last_output(*work);
          ASSERT_TRUE(plain->check(*work, config, stream_->get()).passed(kTolerance));
          const auto ya = tunebench::bench::last_output(*work);
          ASSERT_EQ(ya.size(), yb.size());
          EXPECT_EQ(std::memcmp(ya.data(), yb.data(), ya.size() * 2), 0)
              << (moe ? "moe " : "dense ") << s.set << " " << s.gemm << " scales " << int(pass.lo) << ".."
              << int(pass.hi) << " [" << config.str() << "]";
          ++compared;
        }
        EXPECT_GT(compared, 0) << s.set << " " << s.gemm;
      }
    }
  }
}

// The MoE weights are made on the device: the same bytes random_mxfp4 makes on the host, over
// several 1 MiB chunks of codes and scales and a partial last chunk.
TEST_F(GpuMxfp4, DeviceRandomWeightsAreTheHostGeneratorsBytes) {
  const std::int64_t rows = 2 * 1024 + 48, cols = 1024 + 512;  // 2.4 MiB of codes, 110 KiB of scales
  for (const std::uint64_t seed : {1ull, 1235ull}) {
    const auto host = tunebench::bench::random_mxfp4(rows, cols, seed, kScaleLo, kScaleHi);
    tunebench::DeviceBuffer codes(host.codes.size()), scales(host.scales.size());
    tunebench::bench::fill_random_mxfp4(codes.get(), scales.get(), rows, cols, seed, kScaleLo, kScaleHi,
                                        stream_->get());
    std::vector<std::uint8_t> got_codes(host.codes.size()), got_scales(host.scales.size());
    ASSERT_EQ(cudaStreamSynchronize(stream_->get()), cudaSuccess);
    codes.download(got_codes.data(), got_codes.size());
    scales.download(got_scales.data(), got_scales.size());
    EXPECT_TRUE(got_codes == host.codes) << "seed " << seed;
    EXPECT_TRUE(got_scales == host.scales) << "seed " << seed;
  }
  EXPECT_THROW(tunebench::bench::fill_random_mxfp4(nullptr, nullptr, 1, 33, 1, kScaleLo, kScaleHi, stream_->get()),
               std::invalid_argument);
}

// The activations are made on the device too: random_bf16's values bit for bit, over several
// 1 Mi-value chunks of the host generator and an odd count (a partial last chunk).
TEST_F(GpuMxfp4, DeviceRandomActivationsAreTheHostGeneratorsValues) {
  const std::int64_t count = 3 * (1 << 20) + 12345;
  for (const std::uint64_t seed : {0ull, 7ull, 1235ull}) {
    const auto host = tunebench::bench::random_bf16(static_cast<std::size_t>(count), seed);
    tunebench::DeviceBuffer values(host.size() * 2);
    tunebench::bench::fill_random_bf16(values.get(), count, seed, stream_->get());
    ASSERT_EQ(cudaStreamSynchronize(stream_->get()), cudaSuccess);
    const auto got = tunebench::bench::download_bf16(values);
    ASSERT_EQ(got.size(), host.size());
    std::size_t first_diff = host.size();
    for (std::size_t i = 0; i < host.size() && first_diff == host.size(); ++i) {
      if (got[i] != host[i]) first_diff = i;
    }
    EXPECT_EQ(first_diff, host.size()) << "seed " << seed << ": value " << first_diff << " differs";
  }
  EXPECT_THROW(tunebench::bench::fill_random_bf16(nullptr, 0, 1, stream_->get()), std::invalid_argument);
}
