// mxfp4_wgmma, the wgmma family (WGMMA=1, sm_90a only): both ops' kernel for many rows, dense
// or grouped (MOE), followed by mxfp4_splitk_finish. Its axes, optional ones with their values
// when a config leaves them out, are the wgmma family's in bench/mxfp4_kernel_axes.cpp.
#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(WARPS) || !defined(STAGES) || !defined(SPLIT_K) || !defined(MMA_N) || !defined(MMA_OVERLAP) || !defined(MIN_BLOCKS)
#error "mxfp4_wgmma: the host defines every axis of its family (mxfp4_families in bench/mxfp4_kernel_axes.cpp)"
#endif

#include "mxfp4_common.cuh"
#include "mxfp4_rows.cuh"
#include "mxfp4_atoms.cuh"
#include "mxfp4_wgmma_ops.cuh"

// Many rows on Hopper's warpgroup MMA (wgmma, sm_90a), both ops. Block = WARPS / 4 warpgroups;
// warpgroup wg owns WG_MW tiles of 64 W rows (BLOCK_N = 64 x WG_MW x WARPS / 4). Warp q of the
// group takes rows 16q..16q+15 of each tile: wgmma's register A fragment of m64nNk16 is, warp by
// warp, the mma.m16n8k16 A fragment (PTX ISA, "Register Fragments and Shared Memory Matrix
// Layouts" for wgmma), so pack_for_gpu's layout serves as is, and each W fragment is dequantized
// once per block from shared memory into registers. The activations (the B operand, BLOCK_M
// rows) reach the tensor cores straight from shared memory, in pieces of MMA_N rows (64, 128 or
// 256, default 64: one m64nNk16 with N = MMA_N each); pieces wholly past the block's row count are skipped, so a grouped tile of few pairs costs
// less. B's shared-memory layout is the canonical K-major one without swizzle: 8 x 8 core
// matrices of 128 contiguous bytes (row r of an 8-row group at 16 r), 8-row groups 128 bytes
// apart (the descriptor's stride offset) and the two 8-column halves of a k16 step BLOCK_M x 16
// bytes apart (its leading offset). Config: WGMMA=1, BLOCK_M (a multiple of MMA_N, at most 256), BLOCK_N,
// BLOCK_K (multiple of 32), WARPS (4 or 8), STAGES (>= 2), SPLIT_K (1), FOLDSCALE, optional MMA_N,
// MMA_OVERLAP and MIN_BLOCKS (below).
#define WG_COUNT (WARPS / 4)
#define WG_MW (BLOCK_N / 64 / WG_COUNT)  // 64-row W tiles per warpgroup
#define WG_NP (BLOCK_M / MMA_N)           // activation pieces of MMA_N rows, one wgmma each
#define WG_A_STAGE (BLOCK_M * BLOCK_K * 2)
#define WG_STAGE_BYTES (WG_A_STAGE + WQ_STAGE + WS_STAGE)
#define WG_OUT_LD (BLOCK_N + 8)  // the epilogue's padded row of Y in shared memory (bf16)
#define WG_PIPE_BYTES (STAGES * WG_STAGE_BYTES)
#define WG_OUT_BYTES (BLOCK_M * WG_OUT_LD * 2)
#if SPLIT_K != 1
#error "mxfp4_wgmma takes SPLIT_K 1: its epilogue writes rounded BF16 rows"
#endif
#define WG_SMEM_MAIN (WG_PIPE_BYTES > WG_OUT_BYTES ? WG_PIPE_BYTES : WG_OUT_BYTES)

// MMA_OVERLAP (optional, default 0). 0: each K tile's MMAs are waited for before the block's
// barrier, and the stage of tile kt - 1 is refilled with tile kt + STAGES - 1. 1: the last
// atom's MMAs of tile kt - 1 still run while tile kt starts (its first atom dequantized, its
// first MMAs issued), so the stage refilled is tile kt - 2's, with tile kt + STAGES - 2: one
// tile less of prefetch for no drained tensor pipe at each tile (BLOCK_K a multiple of 64, so
// that a tile's first atom uses the registers of the previous tile's second-to-last one).
// MIN_BLOCKS (optional, default 1): blocks an SM must hold at once (a register bound).
#define WG_AHEAD (STAGES - 1 - MMA_OVERLAP)  // K tiles in flight before the one computed
#ifdef LAUNCH_SMEM_BYTES
static_assert(LAUNCH_SMEM_BYTES == WG_SMEM_MAIN + 2 * BLOCK_M * sizeof(int),
              "the host's dynamic shared memory for mxfp4_wgmma is not its pipeline, epilogue and row indices");
#endif
extern "C" __global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS)
    mxfp4_wgmma(const u16* __restrict__ A, const u8* __restrict__ Wq, const u8* __restrict__ Ws,
                u16* __restrict__ Y, float* __restrict__ Yacc, int rows, int N, int K,
                const int4* __restrict__ tiles, const int* __restrict__ a_rows,
                const int* __restrict__ out_rows) {
  extern __shared__ __align__(128) u8 smem[];
  const int tid = threadIdx.x, lane = tid & 31, wg = tid >> 7, wq = (tid >> 5) & 3;
  const BlockRows br = block_rows(tiles, rows);
  const int expert = br.expert, row0 = br.row0, row_count = br.count;
  const int n0 = blockIdx.x * BLOCK_N;
  const int k_len = K / SPLIT_K, k_begin = blockIdx.z * k_len, k_tiles = k_len / BLOCK_K;
  const long long atoms_per_row = K / 32;
  const u8* wq_g = Wq + (long long)expert * N / 16 * atoms_per_row * 256;
  const u8* ws_g = Ws + (long long)expert * N / 16 * atoms_per_row * 16;
  constexpr int A_CHUNKS = BLOCK_M * BLOCK_K / 8, A_PER_THREAD = (A_CHUNKS + WARPS * 32 - 1) / (WARPS * 32);
  // Each block row's A row and Y row, read from the routing once (not once per K tile and per
  // output element), after the pipeline's and the epilogue's shared memory.
  int* const a_idx = reinterpret_cast<int*>(smem + WG_SMEM_MAIN);
  int* const y_idx = a_idx + BLOCK_M;
  for (int r = tid; r < BLOCK_M; r += WARPS * 32) {
    a_idx[r] = r < row_count ? a_row(a_rows, row0, r) : 0;
    y_idx[r] = r < row_count ? (int)y_row(out_rows, row0, r) : 0;
  }
  __syncthreads();

  auto load_stage = [&](int stage, int kt) {
    u8* base = smem + stage * WG_STAGE_BYTES;
    const int k0 = k_begin + kt * BLOCK_K;
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i) {
      const int c = tid + i * WARPS * 32;
      if (c < A_CHUNKS) {
        // Two neighbouring threads read one row's 32 contiguous bytes (a whole sector).
        const int pair = c >> 1, r = pair % BLOCK_M, kc = (pair / BLOCK_M) * 2 + (c & 1);
        cp_async16(base + kc * (BLOCK_M * 16) + r * 16, A + (long long)a_idx[r] * K + k0 + kc * 8, r < row_count ? 16 : 0);
      }
    }
    // W is staged as in mxfp4_gemm's load_stage, in a copy of its own: one shared helper for
    // both loops (and dropping k_begin, always 0 at SPLIT_K 1) compiled the grouped op's
    // M = 4096 winner and 33 tile cubins to other schedules, which ran up to 2.7% and 3.3%
    // slower on an H200 (2026-12-01, docs/results/ab-stage-helper-prefill-h200-20261201.txt).
    u8* wq_s = base + WG_A_STAGE;
    for (int c = tid; c < WQ_STAGE / 16; c += WARPS * 32) {
      const int t = c / (KA * 16), rest = c % (KA * 16);
      cp_async16(wq_s + c * 16, wq_g + ((long long)(n0 / 16 + t) * atoms_per_row + k0 / 32) * 256 + rest * 16, 16);
    }
    u8* ws_s = wq_s + WQ_STAGE;
    for (int c = tid; c < WS_STAGE / 16; c += WARPS * 32) {
      const int t = c / KA, a = c % KA;
      cp_async16(ws_s + c * 16, ws_g + ((long long)(n0 / 16 + t) * atoms_per_row + k0 / 32 + a) * 16, 16);
    }
  };

  float acc[WG_MW][WG_NP][MMA_N / 2];
#pragma unroll
  for (int m = 0; m < WG_MW; ++m)
#pragma unroll
    for (int p = 0; p < WG_NP; ++p)
#pragma unroll
      for (int i = 0; i < MMA_N / 2; ++i) acc[m][p][i] = 0.0f;

#pragma unroll
  for (int s = 0; s < WG_AHEAD; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<WG_AHEAD - 1>();
    // The copies were written through the generic proxy; wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    {
      // Refills the stage of tile kt - 1 - MMA_OVERLAP, whose MMAs every warp has waited for
      // (below) before the barrier.
      const int next = kt + WG_AHEAD;
      if (next < k_tiles) load_stage(next % STAGES, next);
      cp_async_commit();
    }
    const u8* base = smem + (kt % STAGES) * WG_STAGE_BYTES;
    const u32 a_addr = smem_addr(base);
    const u8* wq_s = base + WG_A_STAGE;
    const u8* ws_s = wq_s + WQ_STAGE;
    // W fragments of two atoms in flight: atom ka + 1 is loaded before, and dequantized after,
    // the wait for atom ka - 1's MMAs, while atom ka's run.
    const int tile0 = (wg * WG_MW * 4 + wq) * KA;  // the warp's first 16-row tile, atom 0
    u32 wa[2][WG_MW][2][4];
#pragma unroll
    for (int m = 0; m < WG_MW; ++m) tile_w_fragment(wq_s, ws_s, tile0 + m * 4 * KA, lane, wa[0][m]);
#pragma unroll
    for (int ka = 0; ka < KA; ++ka) {
#pragma unroll
      for (int m = 0; m < WG_MW; ++m)
#pragma unroll
        for (int p = 0; p < WG_NP; ++p) fence_acc(acc[m][p]);
      wgmma_fence();
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int p = 0; p < WG_NP; ++p) {
          if (p * MMA_N >= row_count) continue;  // block-uniform
          const unsigned long long b =
              smem_desc(a_addr + (ka * 2 + s) * 2 * (BLOCK_M * 16) + p * MMA_N * 16, BLOCK_M * 16, 128);
#pragma unroll
          for (int m = 0; m < WG_MW; ++m) wgmma_rs<MMA_N>(acc[m][p], wa[ka & 1][m][s], b);
        }
      wgmma_commit();
      if (ka + 1 < KA) {
        AtomCodes next[WG_MW];
#pragma unroll
        for (int m = 0; m < WG_MW; ++m) next[m] = load_atom(wq_s, ws_s, tile0 + m * 4 * KA + ka + 1, lane);
        wgmma_wait<1>();  // atom ka - 1's MMAs, which read the registers refilled here
#pragma unroll
        for (int m = 0; m < WG_MW; ++m) dequant_atom(next[m], wa[(ka + 1) & 1][m]);
      }
    }
    wgmma_wait<MMA_OVERLAP>();
  }
  wgmma_wait<0>();
#pragma unroll
  for (int m = 0; m < WG_MW; ++m)
#pragma unroll
    for (int p = 0; p < WG_NP; ++p) fence_acc(acc[m][p]);
  cp_async_wait<0>();

  // D fragment of m64nNk16: register 4i + e at W row 16q + g (+8 for e >= 2) of the tile,
  // activation row 8i + 2t (+1 for odd e) of the piece.
  const int g = lane >> 2, tq = (lane & 3) * 2;
  // Through shared memory, so that Y is written in 16-byte pieces of whole rows: the fragment
  // alone gives 2-byte stores, four Y rows per warp store. Rows are padded by 16 bytes, which
  // puts the four rows a warp writes at once in different banks.
  __syncthreads();  // every warp is done with the pipeline's shared memory
  u16* const out_s = reinterpret_cast<u16*>(smem);
#pragma unroll
  for (int m = 0; m < WG_MW; ++m) {
    const int n = (wg * WG_MW + m) * 64 + wq * 16 + g;
#pragma unroll
    for (int p = 0; p < WG_NP; ++p)
#pragma unroll
      for (int i = 0; i < MMA_N / 2; ++i) {
        const int r = p * MMA_N + (i >> 2) * 8 + tq + (i & 1);
        out_s[r * WG_OUT_LD + n + ((i >> 1) & 1) * 8] = to_bf16(acc[m][p][i]);
      }
  }
  __syncthreads();
  for (int c = tid; c < row_count * (BLOCK_N / 8); c += WARPS * 32) {
    const int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
    *reinterpret_cast<uint4*>(Y + (long long)y_idx[r] * N + n0 + col) =
        *reinterpret_cast<const uint4*>(out_s + r * WG_OUT_LD + col);
  }
}

#include "mxfp4_splitk.cuh"
