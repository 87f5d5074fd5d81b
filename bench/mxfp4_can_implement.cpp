// The shared-memory layouts of the MXFP4 kernels as the host computes them, and can_implement.
#include <algorithm>

#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {
namespace {

struct Tiles {
  std::int64_t block_m, block_n, block_k, warps, warps_k, stages, split_k;
  explicit Tiles(const Config& c)
      : block_m(c.get("BLOCK_M")),
        block_n(c.get("BLOCK_N")),
        block_k(c.get("BLOCK_K")),
        warps(c.get("WARPS")),
        warps_k(c.get("WARPS_K")),
        stages(c.get("STAGES")),
        split_k(c.get("SPLIT_K")) {}
  std::int64_t warps_n() const { return warps / warps_k; }
  // A thread's fp32 accumulators: its warp's W tiles times the block's activation tiles, 4 each.
  std::int64_t accumulators() const { return block_n / 16 / warps_n() * (block_m / 8) * 4; }
  // Mirrors the kernel's split-K-across-warps reduction buffer.
  std::int64_t reduction_bytes() const { return (warps_k - 1) * warps_n() * 32 * accumulators() * 4; }
  // Mirrors STAGE_BYTES in the kernel.
  std::int64_t smem_bytes() const {
    const std::int64_t a = block_m * (block_k + 8) * 2;
    const std::int64_t wq = block_n / 16 * (block_k / 32) * 256;
    const std::int64_t ws = block_n / 16 * (block_k / 32) * 16;
    return stages * (a + wq + ws);
  }
};

}  // namespace

bool is_dequant_config(const Config& config) { return config.has(mxfp4_family(Mxfp4Family::kDequant).marker); }

bool is_decode_config(const Config& config) { return config.has(mxfp4_family(Mxfp4Family::kDecode).marker); }

bool is_wgmma_config(const Config& config) { return config.has(mxfp4_family(Mxfp4Family::kWgmma).marker); }

bool is_wgmma_ws_config(const Config& config) { return config.has(mxfp4_family(Mxfp4Family::kWgmmaWs).marker); }

bool uses_tma(const Config& config) {
  return is_wgmma_ws_config(config) && config.has("TMA") && config.get("TMA") == 1;
}

// Mirrors WG_SMEM_MAIN and the row indices after it in the kernel.
std::int64_t wgmma_smem_bytes(const Config& config) {
  const std::int64_t block_m = config.get("BLOCK_M"), block_k = config.get("BLOCK_K"), block_n = config.get("BLOCK_N");
  const std::int64_t stage = block_m * block_k * 2 + block_n / 16 * (block_k / 32) * (256 + 16);
  const std::int64_t out = block_m * (block_n + 8) * 2;
  return std::max(config.get("STAGES") * stage, out) + 2 * block_m * 4;
}

// Mirrors WS_SMEM_MAIN, the row indices and the mbarriers after it in the kernel.
std::int64_t wgmma_ws_smem_bytes(const Config& config) {
  const std::int64_t block_m = config.get("BLOCK_M"), block_k = config.get("BLOCK_K"), block_n = config.get("BLOCK_N"),
                     stages = config.get("STAGES");
  const std::int64_t w_smem = mxfp4_family(Mxfp4Family::kWgmmaWs).value(config, "W_SMEM");
  const std::int64_t stage = block_m * block_k * 2 + block_n / 16 * (block_k / 32) * (256 + 16);
  // Dequantized W tiles with W_SMEM 1 (two, or one a stage with TMA), and 1024 bytes to align
  // the swizzled rings.
  const std::int64_t w_tiles = w_smem * (uses_tma(config) ? stages : 2);
  const std::int64_t pipe = stages * stage + w_tiles * block_n * block_k * 2 + 1024;
  const std::int64_t out = config.get("SPLIT_K") > 1 ? block_m * (block_n + 4) * 4 : block_m * (block_n + 8) * 2;
  // full and empty mbarriers a stage, and copied with W_SMEM 1.
  return std::max(pipe, out) + 2 * block_m * 4 + (2 + w_smem) * stages * 8;
}

std::int64_t decode_block_n(const Config& config) {
  return mxfp4_family(Mxfp4Family::kDecode).value(config, "BLOCK_N");
}

// Dynamic shared memory of a decode config: each warp's ring of STAGES slots of UNROLL atoms
// (256 bytes of codes and 16 scales each); none for STAGES = 0 (W straight to registers).
std::int64_t decode_smem_bytes(const Config& config) {
  return config.get("WARPS_K") * config.get("STAGES") * config.get("UNROLL") * (256 + 16);
}

std::int64_t launch_smem_bytes(const Config& config) {
  if (is_decode_config(config)) return decode_smem_bytes(config);
  if (is_wgmma_config(config)) return wgmma_smem_bytes(config);
  if (is_wgmma_ws_config(config)) return wgmma_ws_smem_bytes(config);
  return Tiles(config).smem_bytes();
}

bool Mxfp4GpuOp::can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const {
  // Each axis within its family's bounds (and none missing or foreign) first, so that the
  // products below cannot overflow.
  const KernelFamily& family = family_of(config);
  if (!family.admits(config)) return false;
  if (is_dequant_config(config)) {
    return !routed() && shape.m >= kDequantMinRows && shape.n % 16 == 0 && shape.k % 32 == 0;
  }
  if (is_decode_config(config)) {
    const std::int64_t block_m = config.get("BLOCK_M"), warps_k = config.get("WARPS_K"), unroll = config.get("UNROLL"),
                       split_k = config.get("SPLIT_K");
    const std::int64_t stages = config.get("STAGES"), vote = config.get("SCALE_VOTE");
    const std::int64_t block_reduce = family.value(config, "BLOCK_REDUCE"), block_n = family.value(config, "BLOCK_N");
    if (block_reduce == 1 && warps_k == 1) return false;
    if (warps_k > device.max_threads_per_block / 32 || (vote == 0 && stages != 0)) return false;
    if (block_n != 16 && stages != 0) return false;
    // The warps' partial sums (all of them with BLOCK_REDUCE, all but warp 0's without): static
    // shared memory, at most 48 KiB.
    const std::int64_t red_bytes = (warps_k - 1 + block_reduce) * 32 * (block_n / 16) * (block_m / 8) * 4 * 4;
    return red_bytes <= 48 * 1024 &&
           decode_smem_bytes(config) + red_bytes <= static_cast<std::int64_t>(device.smem_per_block_optin) &&
           shape.m <= kDecodeMaxRows && shape.n % block_n == 0 && shape.k % (32 * warps_k * unroll * split_k) == 0;
  }
  if (is_wgmma_config(config)) {
    const std::int64_t block_m = config.get("BLOCK_M"), block_n = config.get("BLOCK_N"),
                       block_k = config.get("BLOCK_K"), warps = config.get("WARPS"), stages = config.get("STAGES"),
                       split_k = config.get("SPLIT_K");
    // wgmma is sm_90a's alone: other architectures neither compile nor run it.
    if (device.cc_major != 9 || device.cc_minor != 0) return false;
    if (block_n % (64 * warps / 4)) return false;
    // MMA_N: activation rows per wgmma, a divisor of BLOCK_M.
    const std::int64_t mma_n = family.value(config, "MMA_N");
    if (block_m % mma_n) return false;
    // MMA_OVERLAP 1 needs a stage beyond the one computed and the one in flight, and an even
    // number of atoms a K tile.
    const std::int64_t overlap = family.value(config, "MMA_OVERLAP");
    if (overlap == 1 && (stages < 3 || block_k % 64)) return false;
    // MIN_BLOCKS (optional): blocks an SM holds at once, within sm_90's 2048 threads and 228 KiB
    // of shared memory, 1 KiB of it reserved per block (CUDA C++ Programming Guide, "Compute
    // Capability 9.0").
    const std::int64_t min_blocks = family.value(config, "MIN_BLOCKS");
    if (min_blocks * warps * 32 > 2048 || min_blocks * (wgmma_smem_bytes(config) + 1024) > 228 * 1024) {
      return false;
    }
    // A thread's accumulators: BLOCK_M / 2 per 64-row W tile of its warpgroup; with 64 more
    // registers for everything else within what MIN_BLOCKS leaves a thread of the 64 Ki
    // registers an SM (ptxas took 124-128 for 64 accumulators at two blocks, H200 build 2026-12-01).
    const std::int64_t accumulators = block_n / 64 / (warps / 4) * block_m / 2;
    if (accumulators > 128 || accumulators + 64 > 65536 / (min_blocks * warps * 32)) return false;
    return shape.m >= kWgmmaMinRows && shape.n % block_n == 0 && shape.k % (block_k * split_k) == 0 &&
           wgmma_smem_bytes(config) <= static_cast<std::int64_t>(device.smem_per_block_optin);
  }
  if (is_wgmma_ws_config(config)) {
    const std::int64_t block_m = config.get("BLOCK_M"), block_n = config.get("BLOCK_N"),
                       block_k = config.get("BLOCK_K"), consumers = config.get("CONSUMERS"),
                       split_k = config.get("SPLIT_K"), mma_n = config.get("MMA_N");
    if (device.cc_major != 9 || device.cc_minor != 0) return false;  // sm_90a's wgmma
    if (block_n % (64 * consumers) || block_m % mma_n) return false;
    // W_SMEM 1 dequantizes with whole producer warpgroups; without it one warp or four copy.
    const std::int64_t producers = family.value(config, "PRODUCERS"), w_smem = family.value(config, "W_SMEM");
    if (w_smem == 1 ? producers == 1 : producers == 8) return false;
    // CLUSTER_REDUCE 1: the SPLIT_K blocks of a tile form one cluster, at most 8 (portable).
    if (family.value(config, "CLUSTER_REDUCE") == 1 && (split_k < 2 || split_k > 8)) return false;
    // TMA 1: the activations through a 2-D tensor map, so rows in order (the dense op).
    if (family.value(config, "TMA") == 1 && routed()) return false;
    // A consumer thread's accumulators (BLOCK_M / 2 per 64-row W tile of its warpgroup), at most
    // 128, as in the wgmma family (ptxas kept 128 of them without spills at 8 warps a block), and
    // 40 registers besides within a thread's share of the SM's 64 Ki (168 at 12 warps, 128 at 16).
    const std::int64_t accumulators = block_n / 64 / consumers * block_m / 2;
    const std::int64_t threads = consumers * 128 + producers * 32;
    if (accumulators > 128 || accumulators + 40 > 65536 / threads / 8 * 8) return false;
    return shape.m >= kWgmmaWsMinRows && shape.n % block_n == 0 && shape.k % (block_k * split_k) == 0 &&
           wgmma_ws_smem_bytes(config) <= static_cast<std::int64_t>(device.smem_per_block_optin);
  }
  const Tiles t(config);
  if (t.warps % t.warps_k || t.block_n % (16 * t.warps_n()) || t.block_k % (32 * t.warps_k)) return false;
  if (shape.n % t.block_n || shape.k % (t.block_k * t.split_k)) return false;
  if (t.accumulators() > 128) return false;
  if (t.warps * 32 > device.max_threads_per_block) return false;
  return t.smem_bytes() <= static_cast<std::int64_t>(device.smem_per_block_optin) &&
         t.reduction_bytes() <= t.smem_bytes();
}

}  // namespace tunebench::bench
