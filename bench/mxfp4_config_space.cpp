// The config spaces of the MXFP4 GPU ops.
#include <algorithm>
#include <mutex>

#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

std::vector<Config> Mxfp4GpuOp::config_space(SpaceKind kind) const {
  // Built once per op and kind: the runner asks for it several times per benchmark.
  const std::size_t i = kind == SpaceKind::kExpanded ? 1 : 0;
  std::call_once(space_once_[i], [&] { space_[i] = make_config_space(kind); });
  return space_[i];
}

std::vector<Config> Mxfp4GpuOp::make_config_space(SpaceKind kind) const {
  const KernelFamily& tile = mxfp4_family(Mxfp4Family::kTile);
  const KernelFamily& decode = mxfp4_family(Mxfp4Family::kDecode);
  const KernelFamily& wgmma = mxfp4_family(Mxfp4Family::kWgmma);
  const KernelFamily& wgmma_ws = mxfp4_family(Mxfp4Family::kWgmmaWs);
  const KernelFamily& dequant = mxfp4_family(Mxfp4Family::kDequant);
  // Each family's configs through its axes (mxfp4_kernel_axes.cpp), which also give the
  // kernel's defines: the marker first, the family's order, an optional axis at its fallback
  // left out of the name. A config two lists share is kept at its first place.
  std::vector<Config> out;
  auto add = [&out](const KernelFamily& family, std::vector<ConfigAxis> axes) {
    for (auto& c : family.space(std::move(axes))) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
    }
  };
  // A wgmma list (SPLIT_K 1): BLOCK_M, its BLOCK_N, BLOCK_K, WARPS and STAGES, then the
  // optional axes it sets (MMA_N, MMA_OVERLAP, MIN_BLOCKS).
  const auto add_wgmma = [&](std::int64_t block_m, std::vector<std::int64_t> block_n, std::vector<std::int64_t> block_k,
                             std::int64_t warps, std::vector<std::int64_t> stages,
                             std::vector<ConfigAxis> optional = {}) {
    std::vector<ConfigAxis> axes{{"BLOCK_M", {block_m}},          {"BLOCK_N", std::move(block_n)},
                                 {"BLOCK_K", std::move(block_k)}, {"WARPS", {warps}},
                                 {"STAGES", std::move(stages)},   {"SPLIT_K", {1}}};
    axes.insert(axes.end(), optional.begin(), optional.end());
    add(wgmma, std::move(axes));
  };
  // The warp-specialized wgmma family for the middle band (M = 32..2048): per BLOCK_M, its
  // MMA_N, the W rows (BLOCK_N, one or two consumer warpgroups), K tiles, stages and split-K,
  // enough block splits for 132 SMs where M gives few block rows (N = 4096, BLOCK_N 128: 32
  // block columns). Nine warps a block leave a consumer thread at most 168 registers (three
  // warps on one of the SM's four register files), so 128 accumulators a thread spill (128 x 256
  // tiles: 200 bytes; 256 x 128: 16 bytes, kept) and no config takes more.
  // Two consumer warpgroups, MMA_N = BLOCK_M: BLOCK_M, BLOCK_N, BLOCK_K, STAGES, SPLIT_K and
  // PRODUCERS lists, then the optional axes a list sets (W_SMEM, CLUSTER_REDUCE, TMA), or an
  // MMA_N of its own.
  const auto add_ws = [&](std::int64_t block_m, std::vector<std::int64_t> block_n, std::vector<std::int64_t> block_k,
                          std::vector<std::int64_t> stages, std::vector<std::int64_t> split_k,
                          std::vector<std::int64_t> producers, std::vector<ConfigAxis> optional = {}) {
    std::vector<std::int64_t> mma_n{block_m};
    for (const auto& axis : optional) {
      if (axis.name == "MMA_N") mma_n = axis.values;
    }
    std::vector<ConfigAxis> axes{
        {"BLOCK_M", {block_m}}, {"BLOCK_N", std::move(block_n)},    {"BLOCK_K", std::move(block_k)},
        {"CONSUMERS", {2}},     {"STAGES", std::move(stages)},      {"SPLIT_K", std::move(split_k)},
        {"MMA_N", mma_n},       {"PRODUCERS", std::move(producers)}};
    for (auto& axis : optional) {
      if (axis.name != "MMA_N") axes.push_back(std::move(axis));
    }
    add(wgmma_ws, std::move(axes));
  };
  const auto add_wgmma_ws = [&] {
    const auto list = [&](std::int64_t block_m, std::vector<std::int64_t> block_n, std::int64_t consumers,
                          std::vector<std::int64_t> block_k, std::vector<std::int64_t> stages,
                          std::vector<std::int64_t> split_k) {
      add(wgmma_ws, {{"BLOCK_M", {block_m}},
                     {"BLOCK_N", std::move(block_n)},
                     {"BLOCK_K", std::move(block_k)},
                     {"CONSUMERS", {consumers}},
                     {"STAGES", std::move(stages)},
                     {"SPLIT_K", std::move(split_k)},
                     {"MMA_N", {std::min<std::int64_t>(block_m, 256)}}});
    };
    list(32, {64}, 1, {128, 256}, {4}, {1, 2, 4, 8});
    list(32, {128}, 2, {128, 256}, {4}, {1, 2, 4, 8});
    list(64, {128}, 2, {128, 256}, {4}, {1, 2, 4, 8});
    list(128, {128}, 2, {128}, {4}, {1, 2, 4});
    list(256, {128}, 2, {64}, {4}, {1, 2});
    list(256, {128}, 2, {128}, {3}, {1});
    // Four producer warps, where a stage's copies are largest against its MMAs.
    add_ws(32, {128}, {128}, {4}, {4}, {4});
    add_ws(64, {128}, {128}, {4}, {2, 4}, {4});
    add_ws(128, {128}, {128}, {4}, {1, 2, 4}, {4});
    add_ws(256, {128}, {64}, {4}, {1}, {4});
    add_ws(256, {128}, {128}, {3}, {1}, {4});
    // 256 W rows a block (two 64-row tiles a consumer warpgroup), which halves the activation
    // reads a W row costs; their 128 accumulators need the registers the copy warpgroup hands
    // over (setmaxnreg, PRODUCERS 4).
    add_ws(64, {256}, {128}, {4}, {2, 4, 8}, {4});
    add_ws(128, {256}, {128}, {4}, {1, 2, 4, 8}, {4});
    add_ws(128, {256}, {64}, {6}, {1, 2}, {4});
    // The split blocks summed in a cluster (CLUSTER_REDUCE 1) instead of by atomics into a
    // workspace and a finishing kernel, on the tiles that split most.
    for (const std::int64_t block_m : {64, 128}) {
      add_ws(block_m, {128, 256}, {128}, {4}, {2, 4, 8}, {4}, {{"CLUSTER_REDUCE", {1}}});
    }
    // W dequantized into shared memory by a producer warpgroup (W_SMEM 1; two warpgroups where
    // a tile's MMAs are short against its dequantization). The two BF16 W tiles take 32 or 64
    // KiB beside the ring, so deep rings fit where BLOCK_M or BLOCK_K is small.
    const std::vector<ConfigAxis> w_smem{{"W_SMEM", {1}}};
    add_ws(32, {128}, {128}, {4, 8}, {2, 4, 8}, {4}, w_smem);
    add_ws(32, {128}, {128}, {8}, {4}, {8}, w_smem);
    add_ws(64, {128}, {128}, {3, 6}, {1, 2, 4}, {4}, w_smem);
    add_ws(64, {128}, {64}, {8}, {2, 4}, {4}, w_smem);
    add_ws(128, {128}, {128}, {3}, {1, 2, 4}, {4, 8}, w_smem);
    add_ws(128, {128}, {64}, {4, 8}, {1, 2, 4}, {4}, w_smem);
    add_ws(256, {128}, {64}, {4, 5}, {1, 2}, {4}, w_smem);
    // The copies by the Tensor Memory Accelerator (TMA 1): the dense op's only, since the grouped
    // op's gathered activation rows have no tensor map.
    if (!routed()) {
      // The four-producer lists with W in registers again, one warp issuing a tile's few bulk
      // copies.
      const std::vector<ConfigAxis> tma{{"TMA", {1}}};
      add_ws(32, {128}, {128}, {4}, {4}, {4}, tma);
      add_ws(64, {128}, {128}, {4}, {2, 4}, {4}, tma);
      add_ws(128, {128}, {128}, {4}, {1, 2, 4}, {4}, tma);
      add_ws(256, {128}, {64}, {4}, {1}, {4}, tma);
      add_ws(256, {128}, {128}, {3}, {1}, {4}, tma);
      add_ws(64, {256}, {128}, {4}, {2, 4, 8}, {4}, tma);
      add_ws(128, {256}, {128}, {4}, {1, 2, 4, 8}, {4}, tma);
      add_ws(128, {256}, {64}, {6}, {1, 2}, {4}, tma);
      // 256 activation rows as two pieces of MMA_N 128 (two 64-register accumulators, as the
      // 128 x 256 tiles have): with one m64n256k16 on 128 accumulator registers ptxas waited for
      // each wgmma before the next (H200 profile, 2026-12-03). Likewise 128 rows as two of 64.
      add_ws(256, {128}, {128}, {3}, {1}, {4}, {{"MMA_N", {128}}, {"TMA", {1}}});
      add_ws(256, {128}, {64}, {4}, {1}, {4}, {{"MMA_N", {128}}, {"TMA", {1}}});
      add_ws(128, {128}, {128}, {4}, {1, 2, 4}, {4}, {{"MMA_N", {64}}, {"TMA", {1}}});
      // The split blocks summed in a cluster with the copies by TMA, for the middle band's
      // split-K configs: no fp32 workspace, atomics or finishing kernel.
      const std::vector<ConfigAxis> tma_cluster{{"CLUSTER_REDUCE", {1}}, {"TMA", {1}}};
      add_ws(32, {128}, {128}, {4}, {2, 4}, {4}, tma_cluster);
      add_ws(64, {128}, {128}, {4}, {2, 4}, {4}, tma_cluster);
      add_ws(128, {128}, {128}, {4}, {2, 4}, {4}, tma_cluster);
      add_ws(128, {128}, {128}, {4}, {2, 4}, {4}, {{"MMA_N", {64}}, {"CLUSTER_REDUCE", {1}}, {"TMA", {1}}});
      add_ws(64, {256}, {128}, {4}, {2, 4, 8}, {4}, tma_cluster);
      add_ws(128, {256}, {128}, {4}, {2, 4, 8}, {4}, tma_cluster);
      // W dequantized into shared memory with the copies by TMA (W_SMEM 1 and TMA 1): one warp
      // copies, the other three or seven dequantize. 1.14-1.75x slower than W in registers from
      // M = 64 to 2048 (H200, 2026-12-03, docs/perf-mxfp4.md): kept to compare against.
      const std::vector<ConfigAxis> w_smem_tma{{"W_SMEM", {1}}, {"TMA", {1}}};
      add_ws(64, {128}, {128}, {3}, {4}, {8}, w_smem_tma);
      add_ws(128, {128}, {128}, {3}, {1, 2, 4}, {8}, w_smem_tma);
      add_ws(256, {128}, {64}, {4}, {1}, {4}, {{"MMA_N", {128}}, {"W_SMEM", {1}}, {"TMA", {1}}});
    }
  };
  // Few rows (both ops): the decode kernel (bench/kernels/mxfp4_decode.cuh). The default keeps
  // the region where the winners of the decode sets sat on an H200 (2026-11-30, 45 configs of
  // BLOCK_M 8 x WARPS_K 1..16 x UNROLL 2/4/8 with each load path and vote setting, both ops):
  // 1 and 2 warps for the grouped op and for M = 64, 4 to 16 for the dense op at M <= 16, no
  // split-K; the ring (STAGES 2) won dense K = 512 (TP4 w2, 4 warps) and tied the register
  // path on EP w2 at M = 1 (16 warps, UNROLL 2).
  const auto add_decode = [&] {
    if (kind == SpaceKind::kExpanded) {
      add(decode, {{"BLOCK_M", {8, 16}},
                   {"WARPS_K", {1, 2, 4, 8, 16, 32}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1, 2, 4}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0, 1}}});
      // The ring with BLOCK_M 8 only: its prefetched activation fragments (UNROLL x BLOCK_M / 2
      // registers) spill under the 64-register bound at BLOCK_M 16.
      add(decode, {{"BLOCK_M", {8}},
                   {"WARPS_K", {1, 2, 4, 8, 16, 32}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {1, 2}},
                   {"SCALE_VOTE", {1}}});
      // Two or four W tiles per block sharing each activation load (register path only; at
      // BLOCK_N 64 the 32-warp reduction buffer would exceed 48 KiB of static shared memory).
      add(decode, {{"BLOCK_M", {8}},
                   {"BLOCK_N", {32}},
                   {"WARPS_K", {1, 2, 4, 8, 16, 32}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0, 1}}});
      add(decode, {{"BLOCK_M", {8}},
                   {"BLOCK_N", {64}},
                   {"WARPS_K", {1, 2, 4, 8, 16}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0, 1}}});
      // The warps' sums added by the whole block (BLOCK_REDUCE 1), for the many-warp blocks
      // where it paid (its default 0 is left out of the name, as BLOCK_N 16 is).
      add(decode, {{"BLOCK_M", {8}},
                   {"WARPS_K", {8, 16, 32}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0, 1}},
                   {"BLOCK_REDUCE", {1}}});
      add(decode, {{"BLOCK_M", {8}},
                   {"BLOCK_N", {32}},
                   {"WARPS_K", {8, 16, 32}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0, 1}},
                   {"BLOCK_REDUCE", {1}}});
    } else {
      add(decode, {{"BLOCK_M", {8}},
                   {"WARPS_K", {1, 2, 4, 8, 16}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0, 1}}});
      add(decode, {{"BLOCK_M", {8}},
                   {"WARPS_K", {4, 16}},
                   {"UNROLL", {2, 4}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {2}},
                   {"SCALE_VOTE", {1}}});
      add(decode, {{"BLOCK_M", {8}},
                   {"BLOCK_N", {32}},
                   {"WARPS_K", {4, 8, 16}},
                   {"UNROLL", {2, 4, 8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {1}}});
      // The winners of EP M = 8 and TP4 w13 M = 4..8 with the block adding the warps' sums: 3-5%
      // and 1-2% faster there (H200, 2026-12-01; slower with WARPS_K 2-4, so not for those).
      add(decode, {{"BLOCK_M", {8}},
                   {"BLOCK_N", {32}},
                   {"WARPS_K", {16}},
                   {"UNROLL", {2, 4}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {1}},
                   {"BLOCK_REDUCE", {1}}});
      add(decode, {{"BLOCK_M", {8}},
                   {"WARPS_K", {16}},
                   {"UNROLL", {8}},
                   {"SPLIT_K", {1}},
                   {"STAGES", {0}},
                   {"SCALE_VOTE", {0}},
                   {"BLOCK_REDUCE", {1}}});
    }
  };
  // Large M (dense only), last: dequantize W to BF16 once per call and hand the GEMM to
  // cuBLASLt, whose tensor-core kernels this op's mma.sync kernel does not match once the GEMM
  // is compute-bound; ALGO indexes cuBLASLt's heuristic candidates as in bf16_gemm, all eight of
  // them in both spaces: candidates 4, 5 and 7 are the fastest at six of the 16 prefill shapes
  // of M >= 2048, up to 1.20x faster than the best of 0..3 (H200, 2026-12-04, docs/perf-mxfp4.md).
  const auto add_dequant = [&] {
    if (routed()) return;
    add(dequant, {{"ALGO", {0, 1, 2, 3, 4, 5, 6, 7}}});
  };
  if (kind == SpaceKind::kExpanded) {
    // A superset of the default space (hundreds of configs): the same families of tiles with
    // more values on every axis, so an exhaustive search can only find the same or better.
    add(tile, {{"BLOCK_M", {8, 16}},
               {"BLOCK_N", {16, 32, 64}},
               {"BLOCK_K", {256, 512}},
               {"WARPS", {4}},
               {"WARPS_K", {1, 2, 4}},
               {"STAGES", {3, 4, 6}},
               {"SPLIT_K", {1, 2, 4}}});
    add(tile, {{"BLOCK_M", {8, 32}},
               {"BLOCK_N", {32}},
               {"BLOCK_K", {256, 512}},
               {"WARPS", {4}},
               {"WARPS_K", {2}},
               {"STAGES", {4}},
               {"SPLIT_K", {1, 4}}});
    add(tile, {{"BLOCK_M", {32, 64}},
               {"BLOCK_N", {64, 128}},
               {"BLOCK_K", {64, 128, 256}},
               {"WARPS", {4, 8}},
               {"WARPS_K", {1, 2}},
               {"STAGES", {2, 3, 4}},
               {"SPLIT_K", {1, 2, 4}}});
    add(tile, {{"BLOCK_M", {128}},
               {"BLOCK_N", {128, 256}},
               {"BLOCK_K", {64, 128}},
               {"WARPS", {8}},
               {"WARPS_K", {1}},
               {"STAGES", {2, 3, 4}},
               {"SPLIT_K", {1}}});
    // Many rows on wgmma (sm_90a): W dequantized once per block into registers, the
    // activations read by the tensor cores from shared memory.
    add_wgmma(64, {128, 256}, {64, 128}, 8, {3, 4});
    add_wgmma(128, {128, 256}, {64, 128}, 8, {3, 4});
    add_wgmma(256, {128}, {64, 128}, 8, {3});
    add_wgmma(256, {128}, {64}, 8, {4});  // BLOCK_K 128 with 4 stages would take 290 KiB
    add_wgmma(64, {128}, {64, 128}, 4, {3, 4});
    // Wider instructions (MMA_N activation rows each) on the same tiles.
    add_wgmma(128, {128, 256}, {64, 128}, 8, {3, 4}, {{"MMA_N", {128}}});
    add_wgmma(256, {128}, {64, 128}, 8, {3}, {{"MMA_N", {128, 256}}});
    add_wgmma(256, {128}, {64}, 8, {4}, {{"MMA_N", {128, 256}}});
    // The last atom's MMAs of a K tile kept running into the next tile.
    add_wgmma(128, {256}, {64, 128}, 8, {3, 4}, {{"MMA_N", {128}}, {"MMA_OVERLAP", {1}}});
    // Two blocks an SM (at most 128 registers a thread), so that one block's barrier, prologue
    // and epilogue overlap another's MMAs.
    for (const bool overlap : {false, true}) {
      const std::vector<ConfigAxis> overlapping =
          overlap ? std::vector<ConfigAxis>{{"MMA_OVERLAP", {1}}} : std::vector<ConfigAxis>{};
      const auto with = [&](std::vector<ConfigAxis> first) {
        first.insert(first.end(), overlapping.begin(), overlapping.end());
        first.push_back({"MIN_BLOCKS", {2}});
        return first;
      };
      add_wgmma(128, {128}, {64}, 8, {3, 4}, with({}));
      add_wgmma(128, {128}, {64}, 8, {3, 4}, with({{"MMA_N", {128}}}));
      add_wgmma(64, {128}, {64, 128}, 8, {3, 4}, with({}));
    }
    // Beyond the edges where the exhaustive winners of the decode sets sat (BLOCK_N 64 and
    // STAGES 6 for BLOCK_M 8/16, on H200, 2026-11-30): wider and deeper decode tiles.
    add(tile, {{"BLOCK_M", {8, 16}},
               {"BLOCK_N", {128}},
               {"BLOCK_K", {256}},
               {"WARPS", {4, 8}},
               {"WARPS_K", {1}},
               {"STAGES", {3, 4, 6, 8}},
               {"SPLIT_K", {1, 2, 4}}});
    add(tile, {{"BLOCK_M", {8, 16}},
               {"BLOCK_N", {64}},
               {"BLOCK_K", {256, 512}},
               {"WARPS", {4}},
               {"WARPS_K", {1}},
               {"STAGES", {8}},
               {"SPLIT_K", {1, 2, 4}}});
    add_wgmma_ws();
    add_decode();
    add_dequant();
    return out;
  }
  // The default space (54 configs) is what an exhaustive search of the expanded space chose on
  // the decode sets on an H200, as families (docs/cache-and-autotuner.md has the figures).
  // Decode (few rows, weight-bound): 8/16-row tiles, 64 columns per block, deep pipelines, and
  // split-K where N alone gives too few blocks to keep the loads in flight.
  add(tile, {{"BLOCK_M", {8, 16}},
             {"BLOCK_N", {64}},
             {"BLOCK_K", {256}},
             {"WARPS", {4}},
             {"WARPS_K", {1}},
             {"STAGES", {3, 4, 6}},
             {"SPLIT_K", {1, 2, 4}}});
  add(tile, {{"BLOCK_M", {8}},
             {"BLOCK_N", {64}},
             {"BLOCK_K", {512}},
             {"WARPS", {4}},
             {"WARPS_K", {1}},
             {"STAGES", {3, 6}},
             {"SPLIT_K", {4}}});
  // Narrow N (N = 1024 shards): fewer columns per block and warps that split K, for more blocks.
  add(tile, {{"BLOCK_M", {8}},
             {"BLOCK_N", {16}},
             {"BLOCK_K", {256}},
             {"WARPS", {4}},
             {"WARPS_K", {4}},
             {"STAGES", {3, 4}},
             {"SPLIT_K", {1, 4}}});
  add(tile, {{"BLOCK_M", {8}},
             {"BLOCK_N", {32}},
             {"BLOCK_K", {256}},
             {"WARPS", {4}},
             {"WARPS_K", {2}},
             {"STAGES", {4}},
             {"SPLIT_K", {1, 4}}});
  // Late decode (M = 32..256): 8 warps on 32/64 x 128 tiles, each dequantized W fragment reused
  // over more rows.
  add(tile, {{"BLOCK_M", {32, 64}},
             {"BLOCK_N", {128}},
             {"BLOCK_K", {128}},
             {"WARPS", {8}},
             {"WARPS_K", {1}},
             {"STAGES", {2}},
             {"SPLIT_K", {1, 2, 4}}});
  add(tile, {{"BLOCK_M", {32, 64}},
             {"BLOCK_N", {128}},
             {"BLOCK_K", {256}},
             {"WARPS", {8}},
             {"WARPS_K", {1}},
             {"STAGES", {3, 4}},
             {"SPLIT_K", {1, 4}}});
  add(tile, {{"BLOCK_M", {32}},
             {"BLOCK_N", {64}},
             {"BLOCK_K", {256}},
             {"WARPS", {8}},
             {"WARPS_K", {2}},
             {"STAGES", {3}},
             {"SPLIT_K", {1, 4}}});
  // The grouped op's prefill on wgmma: the three configs that won its prefill shapes (M >=
  // 4096) in a search of the expanded space's 57 on an H200 (2026-12-01, docs/perf-mxfp4.md):
  // 128 x 256 x 128 tiles at one block an SM, MMA_N 128, with and without MMA_OVERLAP.
  if (routed()) {
    add_wgmma(128, {256}, {128}, 8, {3}, {{"MMA_N", {128}}});
    add_wgmma(128, {256}, {128}, 8, {3, 4}, {{"MMA_N", {128}}, {"MMA_OVERLAP", {1}}});
  }
  // Prefill: the tiles plain autotune chose on the prefill sets (wide tiles, 4 or 8 warps).
  add(tile, {{"BLOCK_M", {32, 64}},
             {"BLOCK_N", {128}},
             {"BLOCK_K", {128}},
             {"WARPS", {4}},
             {"WARPS_K", {1}},
             {"STAGES", {3}},
             {"SPLIT_K", {1, 4}}});
  add(tile, {{"BLOCK_M", {128}},
             {"BLOCK_N", {128, 256}},
             {"BLOCK_K", {64, 128}},
             {"WARPS", {8}},
             {"WARPS_K", {1}},
             {"STAGES", {3, 4}},
             {"SPLIT_K", {1}}});
  // The middle band (M = 64..256) on the warp-specialized wgmma family: the configs that won
  // EP's w13 and w2 there against the tile, decode and dequantize configs, with split-K for
  // 132 SMs, on an H200 (2026-12-02, docs/perf-mxfp4.md): one copying warpgroup (PRODUCERS 4)
  // and 128 or 256 W rows a block.
  // The dense op copies through the Tensor Memory Accelerator instead (TMA 1), 0.78-0.96x the
  // time of the same configs' cp.async copies (median per shape, EP M = 32..2048, H200,
  // 2026-12-03): the configs that won EP and TP4 from M = 32 to 4096 there.
  if (routed()) {
    for (const std::int64_t block_m : {64, 128}) {
      add_ws(block_m, {128, 256}, {128}, {4}, {4}, {4});
      add_ws(block_m, {256}, {128}, {4}, {8}, {4});
    }
    // Prefill at 12-48 pairs an expert (EP M = 1024, 2048): 64 x 256 x 128, SPLIT_K 2 summed in
    // a cluster, the expanded space's fastest WS config there, 1.04-1.15x faster than the tile
    // config that won M = 2048 (H200, 2026-12-03, docs/perf-mxfp4.md, "The grouped op's prefill
    // band on the WS family").
    add_ws(64, {256}, {128}, {4}, {2}, {4}, {{"CLUSTER_REDUCE", {1}}});
    // And from 96 pairs an expert (M >= 4096): 128 x 256 x 128 without split, 1.05-1.13x faster
    // than the wgmma family's fastest config on every prefill shape of both sets at M = 4096 and
    // 8192 (H200, 2026-12-03, same section).
    add_ws(128, {256}, {128}, {4}, {1}, {4});
  } else {
    const std::vector<ConfigAxis> tma{{"TMA", {1}}};
    add_ws(32, {128}, {128}, {4}, {4}, {4}, tma);
    add_ws(64, {128}, {128}, {4}, {2, 4}, {4}, tma);
    add_ws(128, {128}, {128}, {4}, {2, 4}, {4}, tma);
    // Two pieces of activation rows a wgmma (MMA_N = BLOCK_M / 2): 1.05-1.26x faster than one
    // at M = 512..4096, where MMA_N 256 had ptxas wait for every wgmma (H200, 2026-12-03).
    add_ws(128, {128}, {128}, {4}, {1}, {4}, {{"MMA_N", {64}}, {"TMA", {1}}});
    add_ws(256, {128}, {128}, {3}, {1}, {4}, {{"MMA_N", {128}}, {"TMA", {1}}});
    // SPLIT_K 2 summed in a cluster: 0.80-0.87x the time of the fastest TMA config with the
    // atomics and finishing kernel at EP M = 256 (128 x 128), 0.90x that of SPLIT_K 1 at EP w13
    // M = 512 (128 x 256), H200, 2026-12-04 (docs/perf-mxfp4.md, "The middle band, fifth step").
    add_ws(128, {128, 256}, {128}, {4}, {2}, {4}, {{"CLUSTER_REDUCE", {1}}, {"TMA", {1}}});
  }
  add_decode();
  add_dequant();
  return out;
}

}  // namespace tunebench::bench
