// mxfp4_gemm, the tile family (configs without DECODE, WGMMA or DEQUANT_BF16): Y[rows, N] (bf16)
// = A[rows, K] (bf16) . dequant(W_e)[N, K]^T on mma.sync, a cp.async pipeline of shared-memory
// stages, dense or grouped (MOE).
//
// Config (all -D, the axes of the tile family in bench/mxfp4_kernel_axes.cpp): BLOCK_M (rows
// per block, multiple of 8), BLOCK_N (multiple of 16 * WARPS / WARPS_K), BLOCK_K (multiple of
// 32 * WARPS_K), WARPS, WARPS_K (warps sharing one W tile, each taking every WARPS_K-th
// 32-column atom of a K tile; their sums meet in shared memory at the end), STAGES (>= 2,
// cp.async pipeline depth), SPLIT_K (K ranges reduced through fp32 atomics into a workspace,
// then mxfp4_splitk_finish), FOLDSCALE, MOE.
//
// -DLAUNCH_SMEM_BYTES (optional; the host always passes it) is the dynamic shared memory the
// host will launch the kernel with; the kernel static_asserts that it equals its own layout's,
// so the host's mirror of these macros cannot drift unnoticed (as in every GEMM family).
#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(BLOCK_K) || !defined(WARPS) || !defined(WARPS_K) || !defined(STAGES) || !defined(SPLIT_K)
#error "mxfp4_gemm: the host defines every axis of its family (mxfp4_families in bench/mxfp4_kernel_axes.cpp)"
#endif

#include "mxfp4_common.cuh"
#include "mxfp4_rows.cuh"
#include "mxfp4_atoms.cuh"

#define WARPS_N (WARPS / WARPS_K)
#define NT (BLOCK_N / 16 / WARPS_N)  // 16-row W tiles per warp
#define MT (BLOCK_M / 8)           // 8-row activation tiles per block
#define LDA (BLOCK_K + 8)          // padded smem row (bf16): ldmatrix rows hit distinct banks
#define A_STAGE (BLOCK_M * LDA * 2)
#define STAGE_BYTES (A_STAGE + WQ_STAGE + WS_STAGE)

// The B fragments of one lane for 8-row activation tile `row_tile` and atom `ka` of the stage:
// one ldmatrix.x4, the four 8-column quarters of the atom.
__device__ __forceinline__ void act_fragment(const u16* a_s, int row_tile, int ka, int lane, u32 (&b)[4]) {
  const u16* p = a_s + (row_tile * 8 + (lane & 7)) * LDA + ka * 32 + (lane >> 3) * 8;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(smem_addr(p)));
}

#ifdef LAUNCH_SMEM_BYTES
static_assert(LAUNCH_SMEM_BYTES == STAGES * STAGE_BYTES, "the host's dynamic shared memory for mxfp4_gemm is not its pipeline's");
#endif
extern "C" __global__ void __launch_bounds__(WARPS * 32)
    mxfp4_gemm(const u16* __restrict__ A, const u8* __restrict__ Wq, const u8* __restrict__ Ws,
               u16* __restrict__ Y, float* __restrict__ Yacc, int rows, int N, int K,
               const int4* __restrict__ tiles, const int* __restrict__ a_rows,
               const int* __restrict__ out_rows) {
  extern __shared__ __align__(128) u8 smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) / WARPS_K, warp_k = (tid >> 5) % WARPS_K;
  const BlockRows br = block_rows(tiles, rows);
  const int expert = br.expert, row0 = br.row0, row_count = br.count;
  const int n0 = blockIdx.x * BLOCK_N;
  const int k_len = K / SPLIT_K, k_begin = blockIdx.z * k_len, k_tiles = k_len / BLOCK_K;
  const long long atoms_per_row = K / 32;
  const u8* wq = Wq + (long long)expert * N / 16 * atoms_per_row * 256;
  const u8* ws = Ws + (long long)expert * N / 16 * atoms_per_row * 16;

  // Each thread's A rows are fixed across K tiles: resolve the gather once.
  constexpr int A_CHUNKS = BLOCK_M * BLOCK_K / 8, A_PER_THREAD = (A_CHUNKS + WARPS * 32 - 1) / (WARPS * 32);

  auto load_stage = [&](int stage, int kt) {
    u8* base = smem + stage * STAGE_BYTES;
    const int k0 = k_begin + kt * BLOCK_K;
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i) {
      const int c = tid + i * WARPS * 32;
      if (c < A_CHUNKS) {
        const int r = c / (BLOCK_K / 8), col = (c % (BLOCK_K / 8)) * 8;
        const bool valid = r < row_count;
        const int src_row = valid ? a_row(a_rows, row0, r) : 0;
        cp_async16(base + (r * LDA + col) * 2, A + (long long)src_row * K + k0 + col, valid ? 16 : 0);
      }
    }
    u8* wq_s = base + A_STAGE;
    for (int c = tid; c < WQ_STAGE / 16; c += WARPS * 32) {
      const int t = c / (KA * 16), rest = c % (KA * 16);  // 16-row tile, then 16-byte chunk
      const u8* src = wq + ((long long)(n0 / 16 + t) * atoms_per_row + k0 / 32) * 256 + rest * 16;
      cp_async16(wq_s + c * 16, src, 16);
    }
    u8* ws_s = wq_s + WQ_STAGE;
    for (int c = tid; c < WS_STAGE / 16; c += WARPS * 32) {
      const int t = c / KA, a = c % KA;
      cp_async16(ws_s + c * 16, ws + ((long long)(n0 / 16 + t) * atoms_per_row + k0 / 32 + a) * 16, 16);
    }
  };

  float acc[NT][MT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[t][m][i] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  const int g = lane >> 2;
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int next = kt + STAGES - 1;
      if (next < k_tiles) load_stage(next % STAGES, next);
      cp_async_commit();
    }
    const u8* base = smem + (kt % STAGES) * STAGE_BYTES;
    const u16* a_s = reinterpret_cast<const u16*>(base);
    const u8* wq_s = base + A_STAGE;
    const u8* ws_s = wq_s + WQ_STAGE;
#pragma unroll
    for (int ka = 0; ka < KA; ++ka) {
      if (WARPS_K > 1 && ka % WARPS_K != warp_k) continue;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        u32 a[2][4];
        tile_w_fragment(wq_s, ws_s, (warp * NT + t) * KA + ka, lane, a);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          u32 b[4];
          act_fragment(a_s, m, ka, lane, b);
          mma_bf16(acc[t][m], a[0], b[0], b[1]);
          mma_bf16(acc[t][m], a[1], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

#if WARPS_K > 1
  // Warps that split K add their sums into warp_k 0's through the (now idle) pipeline memory.
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem);
  constexpr int PER_LANE = NT * MT * 4;
  if (warp_k > 0) {
    float* dst = red + (((warp_k - 1) * WARPS_N + warp) * 32 + lane) * PER_LANE;
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) dst[(t * MT + m) * 4 + i] = acc[t][m][i];
  }
  __syncthreads();
  if (warp_k > 0) return;
#pragma unroll
  for (int w = 1; w < WARPS_K; ++w) {
    const float* src = red + (((w - 1) * WARPS_N + warp) * 32 + lane) * PER_LANE;
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[t][m][i] += src[(t * MT + m) * 4 + i];
  }
#endif

  // C fragment: c0, c1 at W row g, activation rows 2*(lane%4) + {0,1}; c2, c3 at W row g+8.
  const int tq = (lane & 3) * 2;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int n = n0 + (warp * NT + t) * 16 + g;
#pragma unroll
    for (int m = 0; m < MT; ++m) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = m * 8 + tq + (i & 1);
        if (r < row_count) store_out(Y, Yacc, y_row(out_rows, row0, r) * N + n + (i >> 1) * 8, acc[t][m][i]);
      }
    }
  }
}

#include "mxfp4_splitk.cuh"
