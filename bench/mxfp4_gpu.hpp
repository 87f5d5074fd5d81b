#pragma once
// The MXFP4 GPU ops: mxfp4_gemm (dense) and mxfp4_moe (grouped routed experts), their configs
// in four kernel families (bench/mxfp4_kernel_axes.hpp), each a kernel file of bench/kernels/
// compiled per config with NVRTC.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gemm_cost.hpp"
#include "kernel_source.hpp"
#include "mxfp4.hpp"
#include "mxfp4_kernel_axes.hpp"
#include "tunebench/nvrtc.hpp"
#include "tunebench/op.hpp"

namespace tunebench::bench {

/// MXFP4 weights in the kernel's layout. For a matrix W[rows, cols] (rows a multiple of 16,
/// cols of 32), 16 x 32 atoms in row-major atom order [rows/16][cols/32]:
///   codes: 256 bytes per atom: lane l (g = l/4, t = l%4) owns bytes 8l..8l+7, two 32-bit
///     words for the atom's two k16 steps; in word w, register j (0..3) of the mma.m16n8k16
///     A fragment is row g + 8*(j&1), columns 16w + 2t + 8*(j>>1) (+0 in the word's low
///     half, +1 in its high half). The bits of each E2M1 code (sign, e1, e0, m) are scattered
///     so that register j is one or two rotations and masks of the little-endian word: in
///     half h, the code's bits sit at (16h + {15, 8, 7, 6} - rot) mod 32 with rot 0, 4, 10
///     for j = 0, 1, 2 and, for j = 3, rot 6 for sign, e0, m and rot 30 for e1 (every bit of
///     the word used once); the kernel then has the code's value times 2^-126 as a bf16;
///   scales: 16 bytes per atom, byte r the E8M0 scale of row 16*atom_row + r.
/// Register and fragment layout: PTX ISA, "Matrix Fragments for mma.m16n8k16".
struct PackedMxfp4 {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::uint8_t> codes;   ///< rows * cols / 2 bytes
  std::vector<std::uint8_t> scales;  ///< rows * cols / 32 bytes
};

/// Canonical (bench/mxfp4.hpp) to kernel layout. Throws std::invalid_argument unless rows % 16
/// == 0 and cols % 32 == 0.
PackedMxfp4 pack_for_gpu(const mxfp4::Matrix& w);
/// Kernel layout to canonical, for rows [row0, row0 + nrows) (multiples of 16) of `codes` /
/// `scales` laid out for a matrix of `cols` columns.
mxfp4::Matrix unpack_from_gpu(const std::uint8_t* codes, const std::uint8_t* scales, std::int64_t cols,
                              std::int64_t row0, std::int64_t nrows);

/// The value the kernel computes for element (r, c) of packed weights, decoded on the host the
/// way the kernel decodes its fragments (bit placement, 2^126 correction, scale; `folded`
/// multiplies by the folded scale instead). For tests of the layout and of FOLDSCALE.
float kernel_decode(const PackedMxfp4& w, std::int64_t r, std::int64_t c, bool folded);

/// The translation unit NVRTC compiles for `family`: its kernel file (bench/kernels/) with the
/// embedded headers it includes inlined (flatten_includes).
const std::string& mxfp4_kernel_source(Mxfp4Family family);

/// The MXFP4 ops' kernel version for kernel files `files` (mxfp4_kernel_files() in a build):
/// "mxfp4-" and a hash of every family's translation unit without comments and blank lines
/// (without_comments), so an edit of comments keeps the cached tuning and any edit of code
/// retunes. Throws std::logic_error if a family's file or one it includes is missing.
std::string mxfp4_kernel_version(const KernelFiles& files);

/// Whether `config` belongs to mxfp4_gemm's dequantize-then-cuBLASLt family (it has the
/// parameter DEQUANT_BF16) rather than to the tile configs of the fused kernel.
bool is_dequant_config(const Config& config);

/// Whether `config` belongs to the decode family (it has the parameter DECODE): the
/// mxfp4_decode kernel, warps splitting K with W loaded straight to registers or through a
/// per-warp cp.async ring, for M <= Mxfp4GpuOp::kDecodeMaxRows.
bool is_decode_config(const Config& config);

/// Whether `config` belongs to the wgmma family (it has the parameter WGMMA): the mxfp4_wgmma
/// kernel for many rows on sm_90a (bench/kernels/mxfp4_wgmma.cuh), both ops.
bool is_wgmma_config(const Config& config);

/// Whether `config` belongs to the warp-specialized wgmma family (it has the parameter
/// WGMMA_WS): the mxfp4_wgmma_ws kernel for the middle band of rows on sm_90a
/// (bench/kernels/mxfp4_wgmma_ws.cuh), both ops: PRODUCERS producer warps (1 or 4) bringing W and the
/// activations in with cp.async through a ring of STAGES mbarrier-guarded stages, CONSUMERS
/// warpgroups dequantizing W into wgmma's register fragment and running wgmma on the
/// activations in shared memory, optionally split over K (SPLIT_K blocks, fp32 reductions and
/// mxfp4_splitk_finish). With W_SMEM=1 the producers (4 or 8 warps: 1 or 2 of them copy, the
/// others dequantize W into BF16 tiles in shared memory) feed consumers that run wgmma with both
/// operands there. With CLUSTER_REDUCE=1 the SPLIT_K blocks of a tile (2..8) run as one cluster
/// and sum their partial tiles through distributed shared memory (no workspace, no
/// mxfp4_splitk_finish). With TMA=1 (the dense op only) one producer warp copies each tile
/// with the Tensor Memory Accelerator: the activations through a 2-D tensor map, W's codes and
/// scales as bulk copies.
bool is_wgmma_ws_config(const Config& config);

/// Whether `config` is a warp-specialized wgmma config with TMA=1: its kernel takes the
/// activations' tensor map (CUDA Driver API, cuTensorMapEncodeTiled) as a twelfth parameter,
/// and it exists for the dense op only (the grouped op's gathered rows have no tensor map), so
/// it is never compiled with MOE=1. Throws nothing.
bool uses_tma(const Config& config);

/// Dynamic shared memory of a warp-specialized wgmma config, in bytes: the larger of the
/// pipeline, STAGES x (BLOCK_M x BLOCK_K x 2 + BLOCK_N / 16 x BLOCK_K / 32 x 272), + 2 x
/// BLOCK_N x BLOCK_K x 2 of dequantized W with W_SMEM 1, + 1024 of alignment, and the
/// epilogue's tile (BLOCK_M x (BLOCK_N + 8) x 2 of BF16 at SPLIT_K 1, BLOCK_M x (BLOCK_N + 4) x
/// 4 of fp32 above), then BLOCK_M x 8 of row indices and STAGES x 16 of mbarriers (x 24 with
/// W_SMEM 1). Throws
/// ConfigError if `config` lacks one of those parameters.
std::int64_t wgmma_ws_smem_bytes(const Config& config);

/// Dynamic shared memory of a wgmma config, in bytes: the larger of the pipeline, STAGES x
/// (BLOCK_M x BLOCK_K x 2 of activations + BLOCK_N / 16 x BLOCK_K / 32 atoms x 272 of W codes
/// and scales), and the epilogue's BF16 tile, BLOCK_M x (BLOCK_N + 8) x 2, then BLOCK_M x 8 of
/// row indices. Throws ConfigError if `config` lacks one of those parameters.
std::int64_t wgmma_smem_bytes(const Config& config);

/// W rows per block of a decode config: its BLOCK_N (16, 32 or 64: 1, 2 or 4 tiles of 16 rows
/// sharing each activation load), 16 when it has none (the configs measured before BLOCK_N
/// existed keep their names).
std::int64_t decode_block_n(const Config& config);

/// Threads of a block of the grid-stride kernel mxfp4_splitk_finish.
constexpr int kMxfp4GridStrideThreads = 256;
/// Threads of a block of mxfp4_dequant_bf16: one warp for each of the 8 atoms (16 x 32) of a
/// 16 x 256 piece of W (bench/kernels/mxfp4_dequant.cuh).
constexpr int kMxfp4DequantThreads = 256;

/// Threads of a block of `config`'s first kernel as the MXFP4 ops launch it: WARPS_K x 32 for a
/// decode config (mxfp4_decode), kMxfp4DequantThreads for a dequantize config
/// (mxfp4_dequant_bf16), WARPS x 32 for a tile or wgmma config (mxfp4_gemm, mxfp4_wgmma),
/// CONSUMERS x 128 + PRODUCERS x 32 for a warp-specialized wgmma config (mxfp4_wgmma_ws: its
/// consumer warpgroups and producer warps, PRODUCERS 1 when absent). Throws ConfigError if `config` lacks the
/// parameter.
int mxfp4_block_threads(const Config& config);

/// What the MXFP4 ops compile for `config`, dense or grouped (`moe`), with FOLDSCALE on or off,
/// for `arch` (e.g. "sm_90"), and the kernels they load from it: for a tile config (BLOCK_M,
/// BLOCK_N, BLOCK_K, WARPS, WARPS_K, STAGES, SPLIT_K) mxfp4_gemm, for a decode config (DECODE,
/// BLOCK_M, WARPS_K, UNROLL, SPLIT_K, STAGES, SCALE_VOTE, optional BLOCK_N and BLOCK_REDUCE) mxfp4_decode, for a
/// wgmma config (WGMMA, BLOCK_M, BLOCK_N, BLOCK_K, WARPS, STAGES, SPLIT_K, optional MMA_N,
/// MMA_OVERLAP, MIN_BLOCKS) mxfp4_wgmma and for a warp-specialized wgmma config (WGMMA_WS,
/// BLOCK_M, BLOCK_N, BLOCK_K, CONSUMERS, STAGES, SPLIT_K, MMA_N, optional PRODUCERS)
/// mxfp4_wgmma_ws, both compiled
/// for "sm_90a" when `arch` is "sm_90" (wgmma
/// is in the architecture-specific target only; PTX ISA, "wgmma.mma_async"), each
/// with its dynamic shared memory and followed by mxfp4_splitk_finish; for a dequantize config
/// the dequantization kernel mxfp4_dequant_bf16 alone (one binary for every ALGO; `moe` is
/// ignored). The source is the family's kernel file (mxfp4_kernel_source); every compiled axis of the
/// family becomes a -D define (KernelFamily::defines: an optional axis the config leaves out at its
/// fallback). Throws ConfigError for a config lacking a required axis of its family or having a
/// parameter outside them.
JitBuild mxfp4_jit_build(const Config& config, bool moe, bool foldscale, const std::string& arch);

/// Compiles mxfp4_jit_build's request for `config` through `compiler`'s cache (needs only the
/// parameters it defines). Never throws for a config that fails to compile: the result carries
/// ok == false and the log.
CompileResult compile_mxfp4_kernel(const KernelCompiler& compiler, const Config& config, bool moe, bool foldscale,
                                   const std::string& arch);

/// FLAGGEMS_MXFP4_FOLDSCALE: "0" or unset -> false, "1" -> true; anything else throws
/// std::invalid_argument naming the variable and the accepted values.
bool foldscale_from_env();

/// The output (BF16 bits) of the last check() on a workload of either MXFP4 op, for tests that
/// compare variants bit for bit. Throws std::invalid_argument for other workloads.
std::vector<std::uint16_t> last_output(const Workload& work);

/// Shared machinery of the two MXFP4 GPU ops (config space, can_implement, compilation).
class Mxfp4GpuOp : public Op {
 public:
  /// The H200's measured peaks (measured_roofline in gemm_cost.hpp).
  RooflinePeaks roofline_peaks(const DeviceInfo& device) const override { return measured_roofline(device); }
  /// `foldscale` selects the fold-scale dequant variant (compiled in; not part of the config,
  /// so both variants can run identical configs). Weights get E8M0 scales uniform in
  /// [scale_lo, scale_hi] (default 115..128: 2^-12..2^1, where trained weights sit).
  Mxfp4GpuOp(bool foldscale, std::uint8_t scale_lo, std::uint8_t scale_hi);
  ~Mxfp4GpuOp() override;

  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return true; }
  /// mxfp4::shape_rules(routed()): K a multiple of 32, the MXFP4 block; mxfp4_moe needs the
  /// MoE geometry.
  ShapeRules shape_rules() const override { return mxfp4::shape_rules(routed()); }
  /// mxfp4_kernel_version of the embedded kernel files (FOLDSCALE is not part of it).
  std::string kernel_version() const override;
  /// Smallest M the dequantize-then-cuBLASLt configs run at: below it the GEMM is bound by the
  /// weights' bytes, and writing and rereading W as BF16 (4 bytes per weight against 0.53)
  /// cannot pay off.
  static constexpr std::int64_t kDequantMinRows = 128;
  /// Smallest M (tokens) the wgmma configs run at: their blocks take 64 to 256 rows, and below
  /// it the decode and tile configs have the rows to themselves (on an H200 the tile kernel still
  /// won every grouped prefill shape up to M = 2048, wgmma every one from 4096 on).
  static constexpr std::int64_t kWgmmaMinRows = 128;
  /// Smallest M (tokens) the warp-specialized wgmma configs run at: the middle band starts
  /// where one wgmma of 32 activation rows (MMA_N 32) is no longer mostly padding and the decode
  /// kernel (M <= kDecodeMaxRows) starts to lose to BF16.
  static constexpr std::int64_t kWgmmaWsMinRows = 32;
  /// Largest M the decode configs run at: each block row covers BLOCK_M (8 or 16) rows and
  /// rereads W, so beyond a few block rows the tile configs' reuse of each W fragment wins.
  static constexpr std::int64_t kDecodeMaxRows = 64;

  /// Tile configs of the fused kernel: BLOCK_M, BLOCK_N, BLOCK_K, WARPS, WARPS_K (warps
  /// splitting K within a block), STAGES, SPLIT_K (blocks splitting K). Default (54 tile
  /// configs, chosen by exhaustive search on the decode sets, see the .cpp and
  /// docs/cache-and-autotuner.md): decode tiles (BLOCK_M 8/16, BLOCK_N 16..64), late-decode
  /// tiles (BLOCK_M 32/64, 8 warps) and prefill tiles (BLOCK_M 32..128). Expanded (832 tile
  /// configs, 661 of them usable on the shipped shapes): a superset with more values on every
  /// axis. Both ops add the decode kernel after them, DECODE=1 with BLOCK_M (activation rows
  /// per block), WARPS_K (warps per block, each on 1/WARPS_K of the block's K range), UNROLL
  /// (32-column atoms a warp handles per group), SPLIT_K, STAGES (0: W loads to registers;
  /// >= 1: a per-warp cp.async ring of STAGES groups) and SCALE_VOTE (1: one warp vote per
  /// group selects a scale decode without special cases; the ring always votes), and on the
  /// register path optionally BLOCK_N (32 or 64: W rows per block, 2 or 4 tiles of 16 sharing
  /// each activation load; absent means 16), and optionally BLOCK_REDUCE (1: the whole block
  /// adds the WARPS_K warps' sums, same bits; absent or 0: warp 0 adds them; WARPS_K > 1).
  /// Default: BLOCK_M 8, SPLIT_K 1, WARPS_K
  /// 1/2/4/8/16 x UNROLL 2/4/8 x SCALE_VOTE 0/1 unstaged, WARPS_K 4/16 x UNROLL 2/4 with
  /// STAGES 2, BLOCK_N 32 x WARPS_K 4/8/16 x UNROLL 2/4/8 with the vote, and with BLOCK_REDUCE
  /// 1 BLOCK_N 32 x WARPS_K 16 x UNROLL 2/4 with the vote and WARPS_K 16 x UNROLL 8 without,
  /// 46 configs;
  /// expanded: BLOCK_M 8/16, WARPS_K 1..32, UNROLL 2/4/8, SPLIT_K 1/2/4 unstaged (both votes),
  /// BLOCK_M 8, SPLIT_K 1 with STAGES 1/2, BLOCK_M 8, SPLIT_K 1, BLOCK_N 32 x WARPS_K
  /// 1..32 or BLOCK_N 64 x WARPS_K 1..16, x UNROLL 2/4/8 unstaged (both votes), and BLOCK_M 8,
  /// SPLIT_K 1, BLOCK_N 16/32 x WARPS_K 8/16/32 x UNROLL 2/4/8 unstaged (both votes) with
  /// BLOCK_REDUCE 1, 354 configs.
  /// The wgmma family (WGMMA=1: BLOCK_M activation rows, BLOCK_N W rows, 64 per warpgroup tile,
  /// BLOCK_K, WARPS 4 or 8, STAGES, SPLIT_K 1, and optionally MMA_N, MMA_OVERLAP, MIN_BLOCKS):
  /// in the grouped op's default space three configs for prefill (128 x 256 x 128 with MMA_N 128:
  /// STAGES 3, and STAGES 3/4 with MMA_OVERLAP 1),
  /// none in the dense op's default space (its dequantize family is faster there); in both
  /// ops' expanded space 57 configs. The warp-specialized wgmma family (WGMMA_WS=1: BLOCK_M,
  /// BLOCK_N, BLOCK_K, CONSUMERS, STAGES, SPLIT_K, MMA_N, optional PRODUCERS and W_SMEM): in
  /// both ops' expanded space 59 configs with W dequantized in registers (BLOCK_M 32..256 with
  /// MMA_N = BLOCK_M, BLOCK_N 64..256, BLOCK_K 64..256, SPLIT_K 1..8, one or four producer
  /// warps; 12 of them with CLUSTER_REDUCE 1) and 31 with W dequantized into shared memory (W_SMEM 1, four or eight
  /// producer warps), and in the dense op's alone 41 whose copies go through the Tensor Memory Accelerator (TMA 1; five
  /// of them with W_SMEM 1, 14 with CLUSTER_REDUCE 1; the grouped op's can_implement refuses them too); in
  /// the grouped op's default space the six that won the middle band on an H200 (docs/perf-mxfp4.md: BLOCK_M 64 or
  /// 128, BLOCK_N 128 or 256, BLOCK_K 128, STAGES 4, SPLIT_K 4 or 8, PRODUCERS 4) and two for prefill (64 x 256 x 128
  /// with SPLIT_K 2 and CLUSTER_REDUCE 1, 128 x 256 x 128 with SPLIT_K 1), in the dense op's nine TMA configs that
  /// won M = 32 to 4096 (BLOCK_K 128, PRODUCERS 4: BLOCK_N 128 with BLOCK_M 32, 64, 128 and SPLIT_K 2 or 4, BLOCK_M 128
  /// and 256 with SPLIT_K 1 and MMA_N = BLOCK_M / 2, and BLOCK_M 128, BLOCK_N 128 or 256 with SPLIT_K 2 and
  /// CLUSTER_REDUCE 1). The dense op then adds the dequantize-then-cuBLASLt family, DEQUANT_BF16=1
  /// with ALGO 0..3 (default) or 0..7 (expanded), ALGO indexing cuBLASLt's heuristic candidates as in bf16_gemm. Built
  /// once per op and kind (the same list on every call): each list of the code goes through its family's axes
  /// (KernelFamily::space).
  std::vector<Config> config_space(SpaceKind kind) const override;
  /// Tile configs: N % BLOCK_N == 0, BLOCK_N % (16 * WARPS / WARPS_K) == 0, BLOCK_K % (32 *
  /// WARPS_K) == 0, K % (BLOCK_K * SPLIT_K) == 0, at most 128 fp32 accumulators per thread,
  /// STAGES x stage bytes within the device's opt-in shared memory, WARPS * 32 threads within
  /// its limit. Decode configs: M <= kDecodeMaxRows (tokens, for the grouped op), BLOCK_M 8 or 16,
  /// BLOCK_N 16 (or absent), or 32 or 64 with STAGES 0, N % BLOCK_N == 0,
  /// K % (32 * WARPS_K * UNROLL * SPLIT_K) == 0, WARPS_K * 32 threads within the limit,
  /// UNROLL <= 32, SPLIT_K <= 64, 0 <= STAGES <= 8, SCALE_VOTE 1 (or 0 with STAGES 0),
  /// BLOCK_REDUCE 0 or absent (or 1 with WARPS_K > 1), the warps' reduction buffer
  /// ((WARPS_K - 1 + BLOCK_REDUCE) * 32 * BLOCK_N / 16 * BLOCK_M / 2 * 4 bytes, static
  /// shared memory) within 48 KiB, and it plus the ring (WARPS_K * STAGES * UNROLL * 272 bytes)
  /// within the opt-in shared memory.
  /// Wgmma configs: M >= kWgmmaMinRows, a device of compute capability 9.0 only, BLOCK_M a multiple of MMA_N (64,
  /// 128 or 256; 64 when absent) up to 256, WARPS 4 or 8, BLOCK_N a multiple of 64 x WARPS / 4
  /// (up to 1024), at most 128 fp32 accumulators a thread (BLOCK_N / 64 / (WARPS / 4) x BLOCK_M /
  /// 2), BLOCK_K a multiple of 32 up to 512, 2 <= STAGES <= 8, SPLIT_K 1, MMA_OVERLAP 0 or 1 (1
  /// needs STAGES >= 3 and BLOCK_K a multiple of 64), MIN_BLOCKS 1..16 with that many blocks
  /// within 2048 threads and 228 KiB of shared memory an SM (wgmma_smem_bytes + the 1 KiB
  /// reserved per block, each) and at least accumulators + 64 registers a thread, N % BLOCK_N
  /// == 0, K % BLOCK_K == 0, wgmma_smem_bytes within the opt-in shared memory.
  /// Warp-specialized wgmma configs: M >= kWgmmaWsMinRows, a device of compute capability 9.0
  /// only, BLOCK_M a multiple of MMA_N (32, 64, 128 or 256) up to 256, BLOCK_N a multiple of 64 x
  /// CONSUMERS (1 or 2) up to 1024, at most 128 fp32 accumulators a thread (BLOCK_N / 64 /
  /// CONSUMERS x BLOCK_M / 2), BLOCK_K a multiple of 64 up to 512, 2 <= STAGES <= 8, 1 <= SPLIT_K
  /// <= 16, PRODUCERS 1 or 4 (or absent) with W_SMEM 0 (or absent), 4 or 8 with W_SMEM 1, the
  /// accumulators and 40 registers within a thread's share of 64 Ki (CONSUMERS x 128 +
  /// PRODUCERS x 32 threads), CLUSTER_REDUCE 0 (or absent), or 1 with 2 <= SPLIT_K <= 8, TMA 0 (or absent), or 1
  /// for the dense op,
  /// N % BLOCK_N == 0, K % (BLOCK_K x SPLIT_K) == 0,
  /// wgmma_ws_smem_bytes within the opt-in shared memory.
  /// Dequantize configs: the dense op only, M >= kDequantMinRows, N % 16 == 0, K % 32 == 0,
  /// ALGO >= 0 (an ALGO beyond what cuBLASLt offers for the shape fails in run(), as in
  /// bf16_gemm). A config lacking one of its family's parameters is false, never an exception.
  bool can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const override;
  /// Compiles `configs` into the kernel cache on `threads` threads (NVRTC compiles concurrently),
  /// so a sweep's first run of each config loads a cubin instead of compiling.
  void precompile(const std::vector<Config>& configs, const DeviceInfo& device, int threads) const override;

  bool foldscale() const { return foldscale_; }

 protected:
  /// The loaded kernels for `config` on the current device, compiled on first use (the
  /// kernels of mxfp4_jit_build: kernel(0) the GEMM or dequantization, kernel(1) the split-K
  /// finish). Throws CompileError, "compile_failed: <first line of the log>", if it does not
  /// compile, after printing the whole log on stderr.
  const JitKernels& kernels(const Config& config) const;
  /// Enqueues mxfp4_dequant_bf16 on `stream`: `rows` x `k` packed MXFP4 weights (`wq`, `ws`,
  /// kernel layout, rows a multiple of 16) to row-major BF16 at `wb` (2 * rows * k bytes), the
  /// values the GEMM kernel decodes (exact: an E2M1 value times a power of two).
  void dequantize(const void* wq, const void* ws, void* wb, std::int64_t rows, std::int64_t k,
                  cudaStream_t stream) const;
  /// Enqueues the GEMM (and the split-K finish) on `stream`. The finish takes four sums a
  /// thread, so rows x n must be a multiple of 4: can_implement's N % BLOCK_N == 0, every
  /// BLOCK_N a multiple of 16, keeps it one without a check per launch.
  void launch(const Config& config, const void* a, const void* wq, const void* ws, void* y, float* yacc, int rows,
              int n, int k, int grid_rows, const void* tiles, const int* a_rows, const int* out_rows,
              cudaStream_t stream) const;

  bool foldscale_;
  std::uint8_t scale_lo_, scale_hi_;

 private:
  std::vector<Config> make_config_space(SpaceKind kind) const;

  mutable std::once_flag space_once_[2];  // default, expanded
  mutable std::vector<Config> space_[2];
  JitKernelCache jit_;  // keyed by jit_config(config): every ALGO shares one dequantize kernel
};

/// mxfp4_gemm: Y[M,N] (bf16) = X[M,K] (bf16) . dequant(W)[N,K]^T, W in MXFP4, fp32
/// accumulation. Weights are cold as in serving: the workload holds enough copies of W to
/// exceed 2x L2 and each run uses the next. flops = 2*M*N*K; bytes = 0.53125*N*K + 2*M*K +
/// 2*M*N (docs: roofline of an MXFP4-weight GEMM). check() compares with cpu_mxfp4_gemm.
/// A dequantize config runs two steps per call, both timed: mxfp4_dequant_bf16 writes W as
/// row-major BF16 into a workspace of 2*N*K bytes (allocated on its first run), then
/// cublasLtMatmul computes Y from it (bench/cublaslt_gemm.hpp); the weights are never kept in
/// BF16 between calls, which would give up the memory MXFP4 saves.
class Mxfp4GemmOp final : public Mxfp4GpuOp {
 public:
  explicit Mxfp4GemmOp(bool foldscale, std::uint8_t scale_lo = 115, std::uint8_t scale_hi = 128)
      : Mxfp4GpuOp(foldscale, scale_lo, scale_hi) {}
  std::string name() const override { return "mxfp4_gemm"; }
  /// bf16_gemm: what a user runs without MXFP4 weights.
  std::string baseline() const override { return "bf16_gemm"; }
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;
  CheckResult check(Workload& work, const Config& config, cudaStream_t stream) const override;
  double flops(const Shape& shape) const override;
  double bytes(const Shape& shape) const override;

 private:
  /// The dequantize-then-cuBLASLt path on weights (`wq`, `ws`) of `work`.
  void run_dequant(Workload& work, const void* wq, const void* ws, const Config& config, cudaStream_t stream) const;
};

/// mxfp4_moe: the routed-expert grouped GEMM of one MoE layer. M tokens are routed top_k over
/// E experts (uniformly, distinct experts per token, from the seed); for every routed pair
/// p = token * top_k + slot with expert e, Y[p, :] = A[row(p), :] . dequant(W_e)^T, where for
/// the w13 geometry (gemm name "w13") A = X[M, K] and row(p) = token, and otherwise (w2)
/// A = H[M * top_k, K] and row(p) = p. All E experts' weights live on the device; runs cycle
/// through 8 routings so that small batches do not find their experts in L2.
/// flops = 2*M*top_k*N*K; bytes = E_active*0.53125*N*K + 2*rows(A)*K + 2*M*top_k*N with
/// E_active = E*(1 - (1 - top_k/E)^M), the expected number of distinct experts hit.
class Mxfp4MoeOp final : public Mxfp4GpuOp {
 public:
  explicit Mxfp4MoeOp(bool foldscale, std::uint8_t scale_lo = 115, std::uint8_t scale_hi = 128)
      : Mxfp4GpuOp(foldscale, scale_lo, scale_hi) {}
  std::string name() const override { return "mxfp4_moe"; }
  /// bf16_moe: the same grouped GEMM on BF16 weights through cuBLAS's grouped GEMM.
  std::string baseline() const override { return "bf16_moe"; }
  bool routed() const override { return true; }
  /// All E experts' weights of `shape`'s geometry (E * N rows of K), the very values this op's
  /// workloads made from `seed` hold, dequantized to row-major BF16 [E * N, K] on the current
  /// device (expert e's W_e[N, K] from element e * N * K), for the BF16 baseline (bf16_moe).
  /// Made once per geometry, seed and device and kept for the run, as the MXFP4 weights are
  /// (EP w13: 8 GiB). Synchronizes the device. Throws CudaError (cudaErrorMemoryAllocation when
  /// the card is full), CompileError if the dequantization kernel does not compile, and
  /// std::invalid_argument unless shape.experts * shape.n is a multiple of 16 and K of 32.
  std::shared_ptr<const DeviceBuffer> dequantized_weights(const Shape& shape, std::uint64_t seed) const;
  bool can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const override;
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;
  CheckResult check(Workload& work, const Config& config, cudaStream_t stream) const override;
  double flops(const Shape& shape) const override;
  double bytes(const Shape& shape) const override;

 private:
  /// Enqueues the grouped GEMM for routing `routing` of `work` (tile lists made on first use).
  void launch_routing(Workload& work, std::size_t routing, const Config& config, cudaStream_t stream) const;
};

}  // namespace tunebench::bench
