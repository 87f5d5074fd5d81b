#include <gtest/gtest.h>

#include <map>
#include <set>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "inputs.hpp"
#include "mxfp4_gpu.hpp"

namespace mx = tunebench::mxfp4;
using tunebench::bench::kernel_decode;
using tunebench::bench::pack_for_gpu;
using tunebench::bench::unpack_from_gpu;

namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST(Mxfp4GpuLayout, PackUnpackRoundTrips) {
  const auto w = tunebench::bench::random_mxfp4(48, 96, 3, 0, 254);
  const auto p = pack_for_gpu(w);
  EXPECT_NE(p.codes, w.codes);  // the layout really moves codes
  const auto back = unpack_from_gpu(p.codes.data(), p.scales.data(), 96, 0, 48);
  EXPECT_EQ(back.codes, w.codes);
  EXPECT_EQ(back.scales, w.scales);
  const auto rows = unpack_from_gpu(p.codes.data(), p.scales.data(), 96, 16, 32);
  EXPECT_TRUE(std::equal(rows.codes.begin(), rows.codes.end(), w.codes.begin() + 16 * 96 / 2));
  EXPECT_THROW(pack_for_gpu(tunebench::bench::random_mxfp4(8, 32, 1, 127, 127)), std::invalid_argument);
}

// The scattered bit layout is a bijection: an atom of all-ones codes fills every bit of its
// 256 bytes, and one code sets exactly its own bits.
TEST(Mxfp4GpuLayout, EveryBitOfAnAtomHoldsOneCodeBit) {
  mx::Matrix ones{16, 32, std::vector<std::uint8_t>(16 * 32 / 2, 0xFF), std::vector<std::uint8_t>(16, 127)};
  const auto p = pack_for_gpu(ones);
  EXPECT_TRUE(std::all_of(p.codes.begin(), p.codes.end(), [](std::uint8_t b) { return b == 0xFF; }));
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 32; ++c) {
      mx::Matrix one{16, 32, std::vector<std::uint8_t>(16 * 32 / 2, 0), std::vector<std::uint8_t>(16, 127)};
      one.codes[(r * 32 + c) / 2] = static_cast<std::uint8_t>((c & 1) ? 0xF0 : 0x0F);
      const auto q = pack_for_gpu(one);
      int set = 0;
      for (const auto b : q.codes) set += __builtin_popcount(b);
      ASSERT_EQ(set, 4) << r << "," << c;
    }
  }
}

// The kernel's bit placement, 2^126 correction and scale multiply give exactly the OCP value of
// every element, for every code and every scale, NaN scale and subnormal results included;
// and the folded decode (FOLDSCALE=1) is bit identical to the unfolded one.
TEST(Mxfp4GpuLayout, KernelDecodeIsExactAndFoldScaleIsBitIdentical) {
  mx::Matrix w{16, 32 * 256, std::vector<std::uint8_t>(16 * 32 * 256 / 2), std::vector<std::uint8_t>(16 * 256)};
  for (std::int64_t r = 0; r < 16; ++r) {
    for (std::int64_t c = 0; c < w.cols; c += 2) {
      w.codes[(r * w.cols + c) / 2] = static_cast<std::uint8_t>((c / 2 + r) & 0xFF);  // all pairs
    }
    for (std::int64_t b = 0; b < 256; ++b) w.scales[r * 256 + b] = static_cast<std::uint8_t>((b + r) & 0xFF);
  }
  const auto p = pack_for_gpu(w);
  std::vector<float> ref(static_cast<std::size_t>(16 * w.cols));
  mx::dequantize(w, 0, 16, 0, w.cols, ref.data(), w.cols);
  for (std::int64_t r = 0; r < 16; ++r) {
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const float expect = ref[r * w.cols + c];
      const float plain = kernel_decode(p, r, c, false);
      const float folded = kernel_decode(p, r, c, true);
      if (std::isnan(expect)) {
        EXPECT_TRUE(std::isnan(plain) && std::isnan(folded)) << r << "," << c;
        continue;
      }
      ASSERT_EQ(bits(plain), bits(expect)) << "row " << r << " col " << c;
      ASSERT_EQ(bits(folded), bits(plain)) << "row " << r << " col " << c;
    }
  }
}

TEST(Mxfp4GpuOps, FoldScaleSwitchIsReadStrictly) {
  ::unsetenv("FLAGGEMS_MXFP4_FOLDSCALE");
  EXPECT_FALSE(tunebench::bench::foldscale_from_env());
  ::setenv("FLAGGEMS_MXFP4_FOLDSCALE", "1", 1);
  EXPECT_TRUE(tunebench::bench::foldscale_from_env());
  ::setenv("FLAGGEMS_MXFP4_FOLDSCALE", "yes", 1);
  try {
    tunebench::bench::foldscale_from_env();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "FLAGGEMS_MXFP4_FOLDSCALE='yes': expected 0 or 1");
  }
  ::unsetenv("FLAGGEMS_MXFP4_FOLDSCALE");
}

TEST(Mxfp4GpuOps, CanImplementFollowsTheShapeAndTheDevice) {
  const tunebench::bench::Mxfp4GemmOp op(false);
  const auto dev = tunebench::sm90_reference_device();
  const tunebench::Shape w2tp4{"s", "w2", 8, 4096, 512, 256, 6, std::nullopt};
  const tunebench::Config ok{{"BLOCK_M", 8}, {"BLOCK_N", 128}, {"BLOCK_K", 128}, {"WARPS", 4},
                             {"WARPS_K", 2}, {"STAGES", 3},    {"SPLIT_K", 4}};
  EXPECT_TRUE(op.can_implement(ok, w2tp4, dev));
  auto with = [&](const char* name, std::int64_t v) {
    std::vector<tunebench::Config::Param> p = ok.params();
    for (auto& kv : p) {
      if (kv.first == name) kv.second = v;
    }
    return tunebench::Config(p);
  };
  EXPECT_FALSE(op.can_implement(with("SPLIT_K", 8), w2tp4, dev));    // 512 % (128 * 8)
  EXPECT_FALSE(op.can_implement(with("BLOCK_N", 48), w2tp4, dev));   // not 16 * WARPS / WARPS_K
  EXPECT_FALSE(op.can_implement(with("WARPS_K", 3), w2tp4, dev));    // does not divide WARPS
  EXPECT_FALSE(op.can_implement(with("BLOCK_K", 32), w2tp4, dev));   // < 32 * WARPS_K
  EXPECT_FALSE(op.can_implement(with("BLOCK_M", 512), w2tp4, dev));  // accumulators
  tunebench::DeviceInfo small = dev;
  small.smem_per_block_optin = 16 * 1024;
  EXPECT_FALSE(op.can_implement(ok, w2tp4, small));
  // Every default-space shape of the shipped sets has at least one config.
  for (auto m : {1, 16384}) {
    for (auto nk : {std::pair{4096, 4096}, {4096, 2048}, {1024, 4096}, {4096, 512}}) {
      const tunebench::Shape s{"s", "w13", m, nk.first, nk.second, 256, 6, std::nullopt};
      EXPECT_NO_THROW(op.default_config(s, dev)) << nk.first << "x" << nk.second;
    }
  }
  const tunebench::bench::Mxfp4MoeOp moe(false);
  const tunebench::Shape s{"dsv4f_decode_ep", "w13", 8, 4096, 4096, 256, 6, std::nullopt};
  EXPECT_DOUBLE_EQ(moe.flops(s), 2.0 * 8 * 6 * 4096 * 4096);
  const double active = 256 * (1 - std::pow(250.0 / 256, 8));  // ~44 experts (reference table)
  EXPECT_NEAR(active, 44.24, 0.01);
  EXPECT_DOUBLE_EQ(moe.bytes(s), active * 0.53125 * 4096 * 4096 + 2.0 * 8 * 4096 + 2.0 * 48 * 4096);
}

// The wgmma family: sm_90 (sm_90a code) only; BLOCK_M a multiple of MMA_N up to 256, BLOCK_N a
// multiple of 64 per warpgroup, at most 128 accumulators a thread; MMA_OVERLAP needs 3 stages and
// an even number of atoms a K tile; MIN_BLOCKS blocks must fit an SM's threads and shared memory.
TEST(Mxfp4GpuOps, WgmmaFamilyIsCheckedLikeTheOtherFamilies) {
  using tunebench::bench::is_wgmma_config;
  using tunebench::bench::wgmma_smem_bytes;
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  const auto dev = tunebench::sm90_reference_device();
  const tunebench::Shape prefill{"s", "w13", 4096, 4096, 4096, 256, 6, std::nullopt};
  auto wgmma = [](std::int64_t block_m, std::int64_t block_n, std::int64_t block_k, std::int64_t warps,
                  std::vector<tunebench::Config::Param> extra = {}) {
    std::vector<tunebench::Config::Param> p{{"WGMMA", 1},         {"BLOCK_M", block_m}, {"BLOCK_N", block_n},
                                            {"BLOCK_K", block_k}, {"WARPS", warps},     {"STAGES", 3},
                                            {"SPLIT_K", 1}};
    p.insert(p.end(), extra.begin(), extra.end());
    return tunebench::Config(p);
  };
  const auto best = wgmma(128, 256, 128, 8, {{"MMA_N", 128}, {"MMA_OVERLAP", 1}});
  EXPECT_TRUE(is_wgmma_config(best));
  EXPECT_FALSE(is_wgmma_config(tunebench::Config{{"BLOCK_M", 128}}));
  EXPECT_TRUE(moe.can_implement(best, prefill, dev));
  EXPECT_TRUE(dense.can_implement(best, prefill, dev));
  auto other_arch = dev;
  other_arch.cc_minor = 9;  // wgmma is sm_90a's alone
  EXPECT_FALSE(moe.can_implement(best, prefill, other_arch));
  other_arch.cc_major = 10;
  other_arch.cc_minor = 0;
  EXPECT_FALSE(moe.can_implement(best, prefill, other_arch));
  EXPECT_FALSE(moe.can_implement(wgmma(96, 128, 64, 8), prefill, dev));                     // BLOCK_M % 64
  EXPECT_FALSE(moe.can_implement(wgmma(128, 128, 64, 8, {{"MMA_N", 256}}), prefill, dev));  // MMA_N > BLOCK_M
  EXPECT_FALSE(moe.can_implement(wgmma(128, 128, 64, 8, {{"MMA_N", 96}}), prefill, dev));
  EXPECT_FALSE(moe.can_implement(wgmma(128, 64, 64, 8), prefill, dev));   // 64 W rows for 2 warpgroups
  EXPECT_FALSE(moe.can_implement(wgmma(256, 256, 64, 8), prefill, dev));  // 256 accumulators
  EXPECT_FALSE(moe.can_implement(wgmma(128, 128, 64, 6), prefill, dev));  // whole warpgroups
  EXPECT_FALSE(moe.can_implement(wgmma(128, 128, 48, 8), prefill, dev));  // BLOCK_K % 32
  EXPECT_FALSE(moe.can_implement(wgmma(128, 128, 96, 8, {{"MMA_OVERLAP", 1}}), prefill, dev));  // 3 atoms
  EXPECT_TRUE(moe.can_implement(wgmma(128, 128, 128, 8, {{"MMA_OVERLAP", 1}}), prefill, dev));
  EXPECT_FALSE(moe.can_implement(wgmma(128, 128, 64, 8, {{"MMA_OVERLAP", 2}}), prefill, dev));
  EXPECT_TRUE(moe.can_implement(wgmma(128, 128, 64, 8, {{"MIN_BLOCKS", 2}}), prefill, dev));
  EXPECT_FALSE(moe.can_implement(wgmma(128, 256, 128, 8, {{"MIN_BLOCKS", 2}}), prefill, dev));  // 2 x 148 KiB
  EXPECT_FALSE(moe.can_implement(wgmma(64, 128, 64, 8, {{"MIN_BLOCKS", 9}}), prefill, dev));    // 9 x 256 threads
  EXPECT_FALSE(moe.can_implement(wgmma(64, 128, 64, 8, {{"MIN_BLOCKS", 1LL << 40}}), prefill, dev));
  EXPECT_FALSE(moe.can_implement(wgmma(64, 128, 64, 8, {{"MIN_BLOCKS", 0}}), prefill, dev));
  // 16 blocks of 128 threads leave 32 registers a thread, fewer than 32 accumulators need.
  EXPECT_FALSE(moe.can_implement(wgmma(64, 128, 32, 4, {{"MIN_BLOCKS", 16}}), prefill, dev));
  EXPECT_TRUE(moe.can_implement(wgmma(64, 128, 32, 4, {{"MIN_BLOCKS", 2}}), prefill, dev));
  EXPECT_FALSE(moe.can_implement(tunebench::Config([&] {  // SPLIT_K 1 only: BF16 rows out
                                   auto p = best.params();
                                   for (auto& kv : p) kv.second = kv.first == "SPLIT_K" ? 2 : kv.second;
                                   return p;
                                 }()),
                                 prefill, dev));
  tunebench::Shape few = prefill;
  few.m = tunebench::bench::Mxfp4GpuOp::kWgmmaMinRows - 1;
  EXPECT_FALSE(moe.can_implement(best, few, dev));
  few.m += 1;
  EXPECT_TRUE(moe.can_implement(best, few, dev));
  tunebench::Shape narrow = prefill;
  narrow.n = 4096 + 128;  // a multiple of 128, not of 256
  EXPECT_FALSE(moe.can_implement(best, narrow, dev));
  EXPECT_TRUE(moe.can_implement(wgmma(128, 128, 64, 8), narrow, dev));
  // Shared memory: the pipeline or the epilogue's padded BF16 tile, whichever is larger, then the
  // block's row indices.
  EXPECT_EQ(wgmma_smem_bytes(best), 3 * (128 * 128 * 2 + 16 * 4 * 272) + 128 * 8);
  EXPECT_EQ(wgmma_smem_bytes(wgmma(128, 256, 32, 8)),
            std::max<std::int64_t>(3 * (128 * 32 * 2 + 16 * 272), 128 * 264 * 2) + 128 * 8);
  // Every expanded wgmma config runs the prefill shapes of both ops; the default space holds
  // wgmma configs for the grouped op only (the dense op's large M goes to cuBLASLt).
  int expanded = 0, grouped_default = 0, dense_default = 0;
  for (const auto& c : moe.config_space(tunebench::SpaceKind::kExpanded)) {
    if (!is_wgmma_config(c)) continue;
    ++expanded;
    EXPECT_TRUE(moe.can_implement(c, prefill, dev)) << c.str();
    EXPECT_TRUE(dense.can_implement(c, prefill, dev)) << c.str();
  }
  for (const auto& c : moe.config_space(tunebench::SpaceKind::kDefault)) grouped_default += is_wgmma_config(c);
  for (const auto& c : dense.config_space(tunebench::SpaceKind::kDefault)) dense_default += is_wgmma_config(c);
  EXPECT_GT(expanded, 0);
  EXPECT_GT(grouped_default, 0);
  EXPECT_EQ(dense_default, 0);
}

// The warp-specialized wgmma family: sm_90 (sm_90a code) only; BLOCK_M a multiple of MMA_N up to
// 256, BLOCK_N a multiple of 64 per consumer warpgroup, at most 128 accumulators a thread,
// BLOCK_K a multiple of 64, K a multiple of BLOCK_K x SPLIT_K, M from kWgmmaWsMinRows; a block is
// its consumer warpgroups and one producer warp; shared memory is the pipeline or the epilogue's
// tile (fp32 under split-K), then row indices and two mbarriers a stage.
TEST(Mxfp4GpuOps, WarpSpecializedWgmmaFamilyIsCheckedLikeTheOtherFamilies) {
  using tunebench::bench::is_wgmma_config;
  using tunebench::bench::is_wgmma_ws_config;
  using tunebench::bench::wgmma_ws_smem_bytes;
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  const auto dev = tunebench::sm90_reference_device();
  const tunebench::Shape mid{"s", "w13", 128, 4096, 4096, 256, 6, std::nullopt};
  auto ws = [](std::int64_t block_m, std::int64_t block_n, std::int64_t block_k, std::int64_t consumers,
               std::int64_t split_k, std::int64_t mma_n, std::int64_t stages = 4) {
    return tunebench::Config({{"WGMMA_WS", 1},
                              {"BLOCK_M", block_m},
                              {"BLOCK_N", block_n},
                              {"BLOCK_K", block_k},
                              {"CONSUMERS", consumers},
                              {"STAGES", stages},
                              {"SPLIT_K", split_k},
                              {"MMA_N", mma_n}});
  };
  const auto c = ws(128, 128, 128, 2, 4, 128);
  EXPECT_TRUE(is_wgmma_ws_config(c));
  EXPECT_FALSE(is_wgmma_config(c));
  EXPECT_EQ(&tunebench::bench::family_of(c), &tunebench::bench::mxfp4_family(tunebench::bench::Mxfp4Family::kWgmmaWs));
  EXPECT_EQ(tunebench::bench::mxfp4_block_threads(c), 2 * 128 + 32);
  EXPECT_EQ(tunebench::bench::mxfp4_block_threads(ws(32, 64, 128, 1, 1, 32)), 128 + 32);
  auto four = c.params();
  four.emplace_back("PRODUCERS", 4);
  EXPECT_EQ(tunebench::bench::mxfp4_block_threads(tunebench::Config(four)), 2 * 128 + 4 * 32);
  EXPECT_TRUE(dense.can_implement(tunebench::Config(four), mid, dev));
  four.back().second = 2;
  EXPECT_FALSE(dense.can_implement(tunebench::Config(four), mid, dev));  // PRODUCERS 1 or 4
  EXPECT_TRUE(dense.can_implement(c, mid, dev));
  EXPECT_TRUE(moe.can_implement(c, mid, dev));
  auto other_arch = dev;
  other_arch.cc_minor = 9;
  EXPECT_FALSE(dense.can_implement(c, mid, other_arch));
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 128, 2, 4, 256), mid, dev));  // MMA_N > BLOCK_M
  EXPECT_FALSE(dense.can_implement(ws(96, 128, 128, 2, 4, 64), mid, dev));    // BLOCK_M % MMA_N
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 128, 2, 4, 48), mid, dev));   // MMA_N not offered
  EXPECT_FALSE(dense.can_implement(ws(128, 64, 128, 2, 4, 128), mid, dev));   // 64 W rows, 2 warpgroups
  EXPECT_FALSE(dense.can_implement(ws(256, 256, 64, 2, 1, 256), mid, dev));   // 256 accumulators
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 96, 2, 1, 128), mid, dev));   // 3 atoms a K tile
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 128, 3, 1, 128), mid, dev));  // CONSUMERS 1 or 2
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 128, 2, 1, 128, 1), mid, dev));
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 128, 2, 64, 128), mid, dev));    // SPLIT_K <= 16
  EXPECT_FALSE(dense.can_implement(ws(128, 128, 512, 2, 16, 128), mid, dev));    // K % (BLOCK_K x SPLIT_K)
  EXPECT_FALSE(dense.can_implement(ws(256, 128, 256, 2, 1, 256, 4), mid, dev));  // 4 x 81 KiB of stages
  tunebench::Shape few = mid;
  few.m = tunebench::bench::Mxfp4GpuOp::kWgmmaWsMinRows - 1;
  EXPECT_FALSE(dense.can_implement(ws(32, 128, 128, 2, 4, 32), few, dev));
  few.m += 1;
  EXPECT_TRUE(dense.can_implement(ws(32, 128, 128, 2, 4, 32), few, dev));
  // A config lacking an axis is false, never an exception.
  EXPECT_FALSE(dense.can_implement(tunebench::Config{{"WGMMA_WS", 1}, {"BLOCK_M", 128}}, mid, dev));
  // Shared memory: BF16 epilogue at SPLIT_K 1, fp32 under split-K, whichever is larger than the
  // pipeline (and 1024 bytes to align its swizzled rings); then 8 bytes of row indices a block
  // row and 16 bytes of mbarriers a stage.
  EXPECT_EQ(wgmma_ws_smem_bytes(c), 4 * (128 * 128 * 2 + 8 * 4 * 272) + 1024 + 128 * 8 + 4 * 16);
  EXPECT_EQ(wgmma_ws_smem_bytes(ws(128, 256, 64, 2, 1, 128, 2)),
            std::max<std::int64_t>(2 * (128 * 64 * 2 + 16 * 2 * 272), 128 * 264 * 2) + 128 * 8 + 2 * 16);
  EXPECT_EQ(wgmma_ws_smem_bytes(ws(128, 256, 64, 2, 2, 128, 2)), 128 * 260 * 4 + 128 * 8 + 2 * 16);
  // W_SMEM 1: whole producer warpgroups (4 or 8 warps; 8 only with it), two BF16 W tiles beside
  // the ring, and the accumulators within what 16 warps leave a thread (128 registers).
  const auto smem = [&](std::int64_t block_m, std::int64_t block_k, std::int64_t stages, std::int64_t producers,
                        std::int64_t w_smem = 1) {
    auto p = ws(block_m, 128, block_k, 2, 1, block_m, stages).params();
    p.emplace_back("PRODUCERS", producers);
    p.emplace_back("W_SMEM", w_smem);
    return tunebench::Config(p);
  };
  EXPECT_TRUE(dense.can_implement(smem(128, 128, 3, 4), mid, dev));
  EXPECT_TRUE(moe.can_implement(smem(128, 128, 3, 8), mid, dev));
  EXPECT_FALSE(dense.can_implement(smem(128, 128, 3, 1), mid, dev));     // one warp cannot dequantize for wgmma
  EXPECT_FALSE(dense.can_implement(smem(128, 128, 3, 8, 0), mid, dev));  // 8 producer warps only with W_SMEM
  EXPECT_FALSE(dense.can_implement(smem(128, 128, 4, 4), mid, dev));     // 4 x 41 KiB + 2 x 32 KiB
  EXPECT_FALSE(dense.can_implement(smem(256, 64, 4, 8), mid, dev));      // 128 accumulators, 16 warps
  EXPECT_TRUE(dense.can_implement(smem(256, 64, 4, 4), mid, dev));
  EXPECT_EQ(tunebench::bench::mxfp4_block_threads(smem(128, 128, 3, 8)), 2 * 128 + 8 * 32);
  // CLUSTER_REDUCE 1: 2..8 split blocks a cluster (a portable cluster size).
  const auto cluster = [&](std::int64_t split_k) {
    auto p = ws(128, 256, 128, 2, split_k, 128).params();
    p.emplace_back("PRODUCERS", 4);
    p.emplace_back("CLUSTER_REDUCE", 1);
    return tunebench::Config(p);
  };
  EXPECT_TRUE(dense.can_implement(cluster(8), mid, dev));
  EXPECT_TRUE(moe.can_implement(cluster(2), mid, dev));
  EXPECT_FALSE(dense.can_implement(cluster(1), mid, dev));   // nothing to reduce
  EXPECT_FALSE(dense.can_implement(cluster(16), mid, dev));  // beyond a portable cluster
  // TMA 1: the dense op's activations through a tensor map (in row order), so not the grouped
  // op's gathered rows, with or without a cluster; with W in registers the same shared memory, with W_SMEM
  // a dequantized W tile a stage (three here, not two).
  const auto tma = [&](tunebench::Config base) {
    auto p = base.params();
    p.emplace_back("TMA", 1);
    return tunebench::Config(p);
  };
  auto four_producers = c.params();
  four_producers.emplace_back("PRODUCERS", 4);
  const tunebench::Config rs4(four_producers);
  EXPECT_TRUE(tunebench::bench::uses_tma(tma(rs4)));
  EXPECT_FALSE(tunebench::bench::uses_tma(rs4));
  EXPECT_TRUE(dense.can_implement(tma(rs4), mid, dev));
  EXPECT_FALSE(moe.can_implement(tma(rs4), mid, dev));
  EXPECT_TRUE(dense.can_implement(tma(smem(128, 128, 3, 4)), mid, dev));
  EXPECT_FALSE(moe.can_implement(tma(smem(128, 128, 3, 4)), mid, dev));
  EXPECT_EQ(wgmma_ws_smem_bytes(tma(smem(128, 128, 3, 4))), wgmma_ws_smem_bytes(smem(128, 128, 3, 4)) + 128 * 128 * 2);
  EXPECT_FALSE(dense.can_implement(tma(smem(128, 128, 4, 4)), mid, dev));
  EXPECT_TRUE(dense.can_implement(tma(cluster(8)), mid, dev));
  EXPECT_EQ(wgmma_ws_smem_bytes(tma(rs4)), wgmma_ws_smem_bytes(rs4));
  EXPECT_EQ(wgmma_ws_smem_bytes(smem(128, 128, 3, 4)),
            3 * (128 * 128 * 2 + 8 * 4 * 272) + 2 * 128 * 128 * 2 + 1024 + 128 * 8 + 3 * 24);
  // Every expanded config of the family runs M = 32..2048 on some geometry of the EP and TP4
  // sets; the grouped op's default space holds the six middle-band winners (H200, 2026-12-02), the
  // dense op's their TMA successors and no other config of the family.
  int expanded = 0, tma_expanded = 0, tma_cluster_expanded = 0, grouped_default = 0, dense_default = 0;
  const auto tma_cluster = [](const tunebench::Config& config) {
    return tunebench::bench::uses_tma(config) && config.has("CLUSTER_REDUCE") && config.get("CLUSTER_REDUCE") == 1;
  };
  for (const auto& config : dense.config_space(tunebench::SpaceKind::kExpanded)) {
    if (!is_wgmma_ws_config(config)) continue;
    ++expanded;
    tma_expanded += tunebench::bench::uses_tma(config);
    tma_cluster_expanded += tma_cluster(config);
    tunebench::Shape s = mid;
    s.k = 2048;
    s.m = config.get("BLOCK_M");
    EXPECT_TRUE(dense.can_implement(config, s, dev)) << config.str();
    EXPECT_EQ(moe.can_implement(config, s, dev), !tunebench::bench::uses_tma(config)) << config.str();
  }
  for (const auto& config : moe.config_space(tunebench::SpaceKind::kDefault))
    grouped_default += is_wgmma_ws_config(config);
  // The grouped op's spaces hold no TMA config (it has no variant to compile or run).
  for (const auto kind : {tunebench::SpaceKind::kDefault, tunebench::SpaceKind::kExpanded}) {
    for (const auto& config : moe.config_space(kind)) EXPECT_FALSE(tunebench::bench::uses_tma(config)) << config.str();
  }
  int dense_tma = 0, dense_tma_cluster = 0;
  for (const auto& config : dense.config_space(tunebench::SpaceKind::kDefault)) {
    dense_default += is_wgmma_ws_config(config);
    dense_tma += tunebench::bench::uses_tma(config);
    dense_tma_cluster += tma_cluster(config);
  }
  EXPECT_GE(expanded, 30);
  EXPECT_EQ(tma_expanded, 41);  // README's count, 14 of them summed in a cluster
  EXPECT_EQ(tma_cluster_expanded, 14);
  EXPECT_EQ(grouped_default, 8);  // the middle band's six and two for prefill (H200, 2026-12-03)
  EXPECT_EQ(dense_default, 9);    // the TMA configs that won M = 32..4096 (H200, 2026-12-03, -04)
  EXPECT_EQ(dense_tma, dense_default);
  EXPECT_EQ(dense_tma_cluster, 2);  // SPLIT_K 2 on 128 x 128 and 128 x 256 (H200, 2026-12-04)
}

// The expanded space holds every default config under the same name (an exhaustive search can
// only find the same or better), and a kernel has one name (one cache row): no two configs of a
// space are the same kernel once an optional axis at its default value is dropped and the
// parameters are put in one order.
TEST(Mxfp4GpuOps, TheExpandedSpaceHoldsEveryDefaultConfigUnderOneName) {
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  // The optional axes and the value each takes when absent (the kernel's #ifndef defaults).
  const std::map<std::string, std::int64_t> implied{
      {"MMA_N", 64}, {"MMA_OVERLAP", 0}, {"MIN_BLOCKS", 1}, {"BLOCK_REDUCE", 0}};
  auto kernel_of = [&](const tunebench::Config& c) {
    std::map<std::string, std::int64_t> params(c.params().begin(), c.params().end());
    if (tunebench::bench::is_decode_config(c) && !params.count("BLOCK_N")) params["BLOCK_N"] = 16;
    for (const auto& [name, value] : implied) {
      const auto it = params.find(name);
      if (it != params.end() && it->second == value) params.erase(it);
    }
    return params;
  };
  EXPECT_EQ(kernel_of(tunebench::Config{{"WGMMA", 1}, {"MMA_N", 64}, {"BLOCK_M", 64}}),
            kernel_of(tunebench::Config{{"BLOCK_M", 64}, {"WGMMA", 1}}));
  for (const tunebench::bench::Mxfp4GpuOp* op : {static_cast<const tunebench::bench::Mxfp4GpuOp*>(&dense),
                                                 static_cast<const tunebench::bench::Mxfp4GpuOp*>(&moe)}) {
    for (const auto kind : {tunebench::SpaceKind::kDefault, tunebench::SpaceKind::kExpanded}) {
      std::map<std::map<std::string, std::int64_t>, std::string> kernels;
      for (const auto& c : op->config_space(kind)) {
        const auto [it, fresh] = kernels.emplace(kernel_of(c), c.str());
        EXPECT_TRUE(fresh) << op->name() << ": " << c.str() << " is the kernel of " << it->second;
      }
    }
    std::set<std::string> names;
    for (const auto& c : op->config_space(tunebench::SpaceKind::kExpanded)) names.insert(c.str());
    for (const auto& c : op->config_space(tunebench::SpaceKind::kDefault)) {
      EXPECT_TRUE(names.count(c.str())) << op->name() << ": default config not in the expanded space: " << c.str();
    }
  }
}

TEST(Mxfp4GpuOps, DequantizeFamilyIsDenseOnlyAndForLargeM) {
  using tunebench::bench::is_dequant_config;
  using tunebench::bench::Mxfp4GpuOp;
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  const auto dev = tunebench::sm90_reference_device();
  auto family = [](const std::vector<tunebench::Config>& space) {
    std::vector<std::int64_t> algos;
    for (const auto& c : space) {
      if (is_dequant_config(c)) algos.push_back(c.get("ALGO"));
    }
    return algos;
  };
  const auto def = dense.config_space(tunebench::SpaceKind::kDefault);
  EXPECT_EQ(family(def), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(is_dequant_config(def.front()));  // tile configs first: tests pick them by index
  EXPECT_TRUE(is_dequant_config(def.back()));
  EXPECT_EQ(family(dense.config_space(tunebench::SpaceKind::kExpanded)).size(), 8u);
  EXPECT_TRUE(family(moe.config_space(tunebench::SpaceKind::kDefault)).empty());
  EXPECT_TRUE(family(moe.config_space(tunebench::SpaceKind::kExpanded)).empty());

  const tunebench::Config c{{"DEQUANT_BF16", 1}, {"ALGO", 2}};
  EXPECT_EQ(c.str(), "DEQUANT_BF16=1,ALGO=2");
  const tunebench::Shape large{"s", "w13", Mxfp4GpuOp::kDequantMinRows, 4096, 4096, 256, 6, std::nullopt};
  tunebench::Shape small = large;
  small.m = Mxfp4GpuOp::kDequantMinRows - 1;
  EXPECT_TRUE(dense.can_implement(c, large, dev));
  EXPECT_FALSE(dense.can_implement(c, small, dev));
  EXPECT_FALSE(moe.can_implement(c, large, dev));
  EXPECT_FALSE(dense.can_implement(tunebench::Config{{"DEQUANT_BF16", 1}, {"ALGO", -1}}, large, dev));
}

TEST(Mxfp4GpuOps, DecodeFamilyIsForFewRows) {
  using tunebench::bench::is_decode_config;
  using tunebench::bench::Mxfp4GpuOp;
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  const auto dev = tunebench::sm90_reference_device();
  auto count = [](const std::vector<tunebench::Config>& space) {
    return std::count_if(space.begin(), space.end(), is_decode_config);
  };
  EXPECT_GT(count(dense.config_space(tunebench::SpaceKind::kDefault)), 0);
  EXPECT_GT(count(dense.config_space(tunebench::SpaceKind::kExpanded)), 0);
  EXPECT_EQ(count(moe.config_space(tunebench::SpaceKind::kDefault)),
            count(dense.config_space(tunebench::SpaceKind::kDefault)));
  EXPECT_EQ(count(moe.config_space(tunebench::SpaceKind::kExpanded)),
            count(dense.config_space(tunebench::SpaceKind::kExpanded)));

  const tunebench::Config c{{"DECODE", 1},  {"BLOCK_M", 8}, {"WARPS_K", 8},   {"UNROLL", 4},
                            {"SPLIT_K", 2}, {"STAGES", 0},  {"SCALE_VOTE", 0}};
  const tunebench::Shape decode{"s", "w2", Mxfp4GpuOp::kDecodeMaxRows, 4096, 2048, 256, 6, std::nullopt};
  EXPECT_TRUE(dense.can_implement(c, decode, dev));  // 2048 = 32 * 8 * 4 * 2
  tunebench::Shape more = decode;
  more.m = Mxfp4GpuOp::kDecodeMaxRows + 1;
  EXPECT_FALSE(dense.can_implement(c, more, dev));
  EXPECT_TRUE(moe.can_implement(c, decode, dev));
  EXPECT_FALSE(moe.can_implement(c, more, dev));
  auto with = [&](const char* name, std::int64_t v) {
    std::vector<tunebench::Config::Param> p = c.params();
    for (auto& kv : p) {
      if (kv.first == name) kv.second = v;
    }
    return tunebench::Config(p);
  };
  EXPECT_FALSE(dense.can_implement(with("SPLIT_K", 4), decode, dev));   // 2048 % (32 * 8 * 4 * 4)
  EXPECT_FALSE(dense.can_implement(with("BLOCK_M", 32), decode, dev));  // 8 or 16 rows only
  // 64 warps are 2048 threads, over the limit, while K = 2048 = 32 * 64 * 1 * 1 divides.
  const tunebench::Config too_many{{"DECODE", 1},  {"BLOCK_M", 8}, {"WARPS_K", 64},  {"UNROLL", 1},
                                   {"SPLIT_K", 1}, {"STAGES", 0},  {"SCALE_VOTE", 1}};
  EXPECT_FALSE(dense.can_implement(too_many, decode, dev));
  tunebench::DeviceInfo wide = dev;
  wide.max_threads_per_block = 2048;
  EXPECT_TRUE(dense.can_implement(too_many, decode, wide));
  EXPECT_FALSE(dense.can_implement(tunebench::Config{{"DECODE", 1}}, decode, dev));  // incomplete: no throw
  // BLOCK_REDUCE: 0 or 1, and 1 only where there are warps' sums to add (WARPS_K > 1); with 1
  // the buffer holds every warp's sums, within the 48 KiB of static shared memory.
  auto reduce = [&](std::int64_t block_n, std::int64_t warps_k, std::int64_t r) {
    return tunebench::Config{{"DECODE", 1},  {"BLOCK_M", 8}, {"BLOCK_N", block_n}, {"WARPS_K", warps_k}, {"UNROLL", 2},
                             {"SPLIT_K", 1}, {"STAGES", 0},  {"SCALE_VOTE", 1},    {"BLOCK_REDUCE", r}};
  };
  const tunebench::Shape ep{"s", "w13", 8, 4096, 4096, 256, 6, std::nullopt};
  EXPECT_TRUE(dense.can_implement(reduce(32, 16, 1), ep, dev));
  EXPECT_TRUE(dense.can_implement(reduce(32, 16, 0), ep, dev));
  EXPECT_FALSE(dense.can_implement(reduce(32, 16, 2), ep, dev));
  EXPECT_FALSE(dense.can_implement(reduce(32, 1, 1), ep, dev));
  EXPECT_TRUE(dense.can_implement(reduce(32, 1, 0), ep, dev));
  EXPECT_TRUE(dense.can_implement(reduce(64, 16, 1), ep, dev));   // 16 x 32 x 16 x 4 = 32 KiB
  EXPECT_FALSE(dense.can_implement(reduce(64, 32, 1), ep, dev));  // 64 KiB
  // The staged path's rings: 16 warps x 3 slots x 8 atoms x 272 bytes = 104,448 bytes fit the
  // 232,448 of an sm_90 block; 32 warps x 4 slots x 4 atoms = 139,264 fit, x 8 atoms do not.
  const tunebench::Shape deep{"s", "w13", 1, 4096, 8192, 256, 6, std::nullopt};  // K divisible by all three
  auto staged = [](std::int64_t warps_k, std::int64_t unroll, std::int64_t stages, std::int64_t block_m = 8) {
    return tunebench::Config{{"DECODE", 1},  {"BLOCK_M", block_m}, {"WARPS_K", warps_k}, {"UNROLL", unroll},
                             {"SPLIT_K", 1}, {"STAGES", stages},   {"SCALE_VOTE", 1}};
  };
  EXPECT_TRUE(dense.can_implement(staged(16, 8, 3), deep, dev));
  EXPECT_TRUE(moe.can_implement(staged(32, 4, 4), deep, dev));
  EXPECT_FALSE(moe.can_implement(staged(32, 8, 4), deep, dev));
  EXPECT_FALSE(dense.can_implement(staged(16, 8, -1), deep, dev));
  // The warps' reduction buffer counts too: at BLOCK_M 16, 32 warps x 3 slots x 8 atoms is
  // 208,896 bytes of ring (fits) plus 31 x 32 x 2 x 16 = 31,744 of buffer (does not).
  EXPECT_TRUE(dense.can_implement(staged(32, 8, 2, 16), deep, dev));
  EXPECT_FALSE(dense.can_implement(staged(32, 8, 3, 16), deep, dev));
  // Values far out of range are false, without overflowing the size arithmetic.
  EXPECT_FALSE(dense.can_implement(with("UNROLL", std::int64_t{1} << 62), decode, dev));
  EXPECT_FALSE(dense.can_implement(with("WARPS_K", std::int64_t{1} << 62), decode, dev));
  // The ring copies a group's scales with one lane per atom: UNROLL 32 at most.
  EXPECT_TRUE(dense.can_implement(staged(1, 32, 1), deep, dev));
  EXPECT_FALSE(dense.can_implement(staged(1, 64, 1), deep, dev));
  // The vote is optional on the register path only; the ring always votes.
  EXPECT_TRUE(dense.can_implement(with("SCALE_VOTE", 1), decode, dev));
  EXPECT_FALSE(dense.can_implement(with("SCALE_VOTE", 2), decode, dev));
  tunebench::Config ring_without_vote{{"DECODE", 1},  {"BLOCK_M", 8}, {"WARPS_K", 8},   {"UNROLL", 4},
                                      {"SPLIT_K", 2}, {"STAGES", 1},  {"SCALE_VOTE", 0}};
  EXPECT_FALSE(dense.can_implement(ring_without_vote, decode, dev));
  tunebench::Shape odd_n = decode;
  odd_n.n = 4104;
  EXPECT_FALSE(dense.can_implement(c, odd_n, dev));
}

TEST(Mxfp4GpuOps, DecodeBlockNTakesTwoOrFourTilesOnTheRegisterPath) {
  using tunebench::bench::decode_block_n;
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  const auto dev = tunebench::sm90_reference_device();
  auto decode = [](std::int64_t block_n, std::int64_t warps_k, std::int64_t stages = 0) {
    return tunebench::Config{{"DECODE", 1}, {"BLOCK_M", 8}, {"BLOCK_N", block_n}, {"WARPS_K", warps_k},
                             {"UNROLL", 2}, {"SPLIT_K", 1}, {"STAGES", stages},   {"SCALE_VOTE", 1}};
  };
  const tunebench::Shape s{"s", "w13", 8, 4096, 4096, 256, 6, std::nullopt};
  EXPECT_EQ(decode_block_n(tunebench::Config{{"DECODE", 1}}), 16);  // configs without it: one tile
  EXPECT_EQ(decode_block_n(decode(64, 4)), 64);
  for (const std::int64_t block_n : {16, 32, 64}) {
    EXPECT_TRUE(dense.can_implement(decode(block_n, 16), s, dev)) << block_n;
    EXPECT_TRUE(moe.can_implement(decode(block_n, 16), s, dev)) << block_n;
  }
  EXPECT_FALSE(dense.can_implement(decode(48, 4), s, dev));  // 16, 32 or 64 only
  EXPECT_FALSE(dense.can_implement(decode(128, 4), s, dev));
  EXPECT_FALSE(dense.can_implement(decode(32, 4, 2), s, dev));  // the ring takes one tile
  EXPECT_TRUE(dense.can_implement(decode(16, 4, 2), s, dev));
  tunebench::Shape n_not_multiple = s;
  n_not_multiple.n = 4096 + 32;  // a multiple of 16 and 32, not of 64
  EXPECT_TRUE(dense.can_implement(decode(32, 4), n_not_multiple, dev));
  EXPECT_FALSE(dense.can_implement(decode(64, 4), n_not_multiple, dev));
  // The warps' partial sums live in static shared memory (48 KiB): 31 x 32 x 4 tiles x 16
  // bytes = 63,488 at BLOCK_N 64 with 32 warps; 31,744 at BLOCK_N 32.
  EXPECT_FALSE(dense.can_implement(decode(64, 32), s, dev));
  EXPECT_TRUE(dense.can_implement(decode(32, 32), s, dev));
  // Every expanded config can run some decode shape: none is dead weight.
  for (const auto& c : dense.config_space(tunebench::SpaceKind::kExpanded)) {
    if (!tunebench::bench::is_decode_config(c)) continue;
    const tunebench::Shape big_k{"s", "w13", 1, 4096, 32 * 32 * 8 * 4, 256, 6, std::nullopt};  // K for every axis value
    EXPECT_TRUE(dense.can_implement(c, big_k, dev)) << c.str();
  }
}

// Activations are made in parallel chunks, yet they are the values of one sequential generator:
// every machine and thread count gets the same inputs as before the chunks.
TEST(Inputs, RandomBf16IsOneSequentialGeneratorOnAnyNumberOfThreads) {
  const std::size_t count = (3u << 20) + 12345;  // more than two chunks, the last one partial
  for (const std::uint64_t seed : {0ull, 7ull}) {
    const auto values = tunebench::bench::random_bf16(count, seed);
    tunebench::bench::Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(values[i], tunebench::mxfp4::float_to_bf16(rng.uniform(-1.0f, 1.0f)))
          << "seed " << seed << " value " << i;
    }
  }
}
