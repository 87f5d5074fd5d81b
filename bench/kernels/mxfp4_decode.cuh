// mxfp4_decode, the decode family (DECODE=1): both ops' kernel for few rows, dense or grouped
// (MOE), followed by mxfp4_splitk_finish. Its axes, optional ones with their values when a
// config leaves them out, are the decode family's in bench/mxfp4_kernel_axes.cpp.
#if !defined(BLOCK_M) || !defined(BLOCK_N) || !defined(WARPS_K) || !defined(UNROLL) || !defined(SPLIT_K) || !defined(STAGES) || !defined(SCALE_VOTE) || !defined(BLOCK_REDUCE)
#error "mxfp4_decode: the host defines every axis of its family (mxfp4_families in bench/mxfp4_kernel_axes.cpp)"
#endif

#include "mxfp4_common.cuh"
#include "mxfp4_rows.cuh"

// Decode (few rows): no shared-memory tile pipeline. Block = WARPS_K warps on BLOCK_N / 16
// W tiles of 16 rows (BLOCK_N 16 when not given), each warp taking a contiguous 1/WARPS_K of
// the block's K range in groups of UNROLL atoms, the activation fragments it loads for a group
// shared by the block's tiles (so BLOCK_N 32 halves the activations' L2 traffic, which at
// BLOCK_N 16 and 8 rows is twice W's bytes); the warps' sums meet in shared memory; SPLIT_K > 1 adds the blocks' sums through fp32
// atomics as in mxfp4_gemm. Rows: BLOCK_M (8 or 16) activation rows per block row (the mma's N
// dimension). A group's W reaches the warp one of two ways:
//   STAGES = 0: loads straight to registers (8 bytes of codes per lane per atom, streaming);
//   STAGES >= 1: cp.async into the warp's own ring of STAGES group slots in shared memory.
// SCALE_VOTE = 1 (always with STAGES >= 1) decodes a group's scales without the special cases
// of 0 and 0xFF (and with FOLDSCALE in one multiply) when one warp vote finds them all in range.
// H200 measurements (docs/perf-mxfp4.md): the vote wins on the grouped op (and with FOLDSCALE=1
// everywhere), the register path without it on some dense shapes, the ring on dense K = 512.
#define DMT (BLOCK_M / 8)
#define DNT (BLOCK_N / 16)  // 16-row W tiles per block
// BLOCK_REDUCE (optional, default 0): how the WARPS_K warps' sums are added. 0: warp 0 adds the
// others' to its own, a chain of (WARPS_K - 1) x DNT x DMT x 4 shared loads and adds a lane;
// 1: every thread of the block adds one or a few of the outputs, in the same order (the same
// bits). 1 also frees warp 0's registers of the epilogue: the BLOCK_N 32, WARPS_K 16, UNROLL 2
// config takes 52 registers instead of 64, and EP M = 8 runs 3-5% faster; with few warps
// (WARPS_K 2-4) it was 1-5% slower (H200, 2026-12-01, docs/perf-mxfp4.md).
#if STAGES > 0 && DNT != 1
#error "the decode kernel's ring (STAGES >= 1) takes one W tile per block (BLOCK_N 16)"
#endif

__device__ __forceinline__ uint2 ld_stream_v2(const u8* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

// The B fragments of UNROLL atoms from atom a0 on. Rows past the block's count read a valid row
// instead (arow): they only feed output columns that are never stored, and loading them
// unpredicated saves the zeroing and predicates of every load (the lanes of those rows ask for
// the same addresses as the valid row's, so the warp's request does not grow).
__device__ __forceinline__ void load_b(const u16* const (&arow)[DMT], int a0, u32 (&b)[UNROLL][DMT][4]) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int m = 0; m < DMT; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        b[u][m][i] = __ldg(reinterpret_cast<const u32*>(arow[m] + (long long)(a0 + u) * 32 + i * 8));
}

// Dequantizes and multiplies a group of UNROLL atoms (codes q, scale codes lo/hi of rows g and
// g + 8). With VOTE, one vote per group sends the common case (every scale of the group in the
// fast range) down a path without the per-atom special cases and selects of atom_scales; both
// paths give the same bits.
template <bool FAST>
__device__ __forceinline__ void group_mma_as(const uint2 (&q)[UNROLL], const u32 (&lo)[UNROLL], const u32 (&hi)[UNROLL],
                                             const u32 (&b)[UNROLL][DMT][4], float (&acc)[DMT][4]) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    u32 w0[4], w1[4];
    if (FAST) {
      const u32 pl = fast_pair(lo[u]), ph = fast_pair(hi[u]);
      dequant_word_fast(q[u].x, pl, ph, w0);
      dequant_word_fast(q[u].y, pl, ph, w1);
    } else {
      const AtomScales sc = atom_scales(lo[u], hi[u]);
      dequant_word(q[u].x, sc, w0);
      dequant_word(q[u].y, sc, w1);
    }
#pragma unroll
    for (int m = 0; m < DMT; ++m) {
      mma_bf16(acc[m], w0, b[u][m][0], b[u][m][1]);
      mma_bf16(acc[m], w1, b[u][m][2], b[u][m][3]);
    }
  }
}

template <bool VOTE>
__device__ __forceinline__ void group_mma(const uint2 (&q)[UNROLL], const u32 (&lo)[UNROLL], const u32 (&hi)[UNROLL],
                                          const u32 (&b)[UNROLL][DMT][4], float (&acc)[DMT][4]) {
  bool fast = VOTE;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) fast = fast && fast_scale(lo[u]) && fast_scale(hi[u]);
  if (VOTE && __all_sync(0xffffffffu, fast)) {
    group_mma_as<true>(q, lo, hi, b, acc);
  } else {
    group_mma_as<false>(q, lo, hi, b, acc);
  }
}

// Staged, at most 64 registers a thread, so that 1024 threads (two blocks of 16 warps) fit an
// SM: unbounded, the prefetched activation fragments took 87 and left one block of 16 warps a
// SM, two waves for the 256 blocks of N = 4096 (H200, 2026-11-30). (The register path takes 32
// unbounded without the vote, more with it.)
#if STAGES > 0
#define DECODE_MIN_BLOCKS (WARPS_K >= 32 ? 1 : 32 / WARPS_K)
#else
#define DECODE_MIN_BLOCKS 1
#endif
#ifdef LAUNCH_SMEM_BYTES
static_assert(LAUNCH_SMEM_BYTES == (STAGES > 0 ? WARPS_K * STAGES * UNROLL * (256 + 16) : 0),
              "the host's dynamic shared memory for mxfp4_decode is not its ring's");
#endif
extern "C" __global__ void __launch_bounds__(WARPS_K * 32, DECODE_MIN_BLOCKS)
    mxfp4_decode(const u16* __restrict__ A, const u8* __restrict__ Wq, const u8* __restrict__ Ws,
                 u16* __restrict__ Y, float* __restrict__ Yacc, int rows, int N, int K,
                 const int4* __restrict__ tiles, const int* __restrict__ a_rows,
                 const int* __restrict__ out_rows) {
  constexpr int ACC = DNT * DMT * 4;  // a lane's accumulators
  __shared__ float red[WARPS_K > 1 ? WARPS_K - 1 + BLOCK_REDUCE : 1][32][ACC];
  const int lane = threadIdx.x & 31, wk = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const BlockRows br = block_rows(tiles, rows);
  const int expert = br.expert, row0 = br.row0, row_count = br.count;
  const long long atoms_per_row = K / 32;
  const int atoms_warp = K / 32 / SPLIT_K / WARPS_K;
  const long long atom0 = (long long)blockIdx.z * (K / 32 / SPLIT_K) + (long long)wk * atoms_warp;
  // The first of the block's DNT tiles; tile j starts j * atoms_per_row atoms later.
  const long long tile_atoms = ((long long)expert * (N / 16) + (long long)blockIdx.x * DNT) * atoms_per_row + atom0;
  // The B fragments of lane (g, t): activation row g of each 8-row tile, columns 2t, 2t + 1 of
  // each 8-column quarter of an atom.
  const u16* arow[DMT];
#pragma unroll
  for (int m = 0; m < DMT; ++m) {
    // Rows past the count read the block's first row (see load_b).
    const int r = m * 8 + g < row_count ? m * 8 + g : 0;
    arow[m] = A + (long long)a_row(a_rows, row0, r) * K + atom0 * 32 + 2 * t;
  }

  float acc[DNT][DMT][4];
#pragma unroll
  for (int j = 0; j < DNT; ++j)
#pragma unroll
    for (int m = 0; m < DMT; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[j][m][i] = 0.0f;

#if STAGES > 0
  // Staged: each warp copies its W codes and scales for UNROLL atoms at a time into its own
  // shared-memory ring of STAGES slots with cp.async, which needs no registers, so every warp
  // keeps all of a group in flight (ptxas sinks register loads next to their use: H200,
  // 2026-11-30, 32 registers and ~2 atoms in flight per warp, 1.2 TB/s at M = 1).
  extern __shared__ __align__(16) u8 dsm[];
  constexpr int WQ_BYTES = UNROLL * 256, SLOT = UNROLL * (256 + 16);
  u8* const ring = dsm + wk * (STAGES * SLOT);
  const u8* const gq = Wq + tile_atoms * 256;
  const u8* const gs = Ws + tile_atoms * 16;
  const int groups = atoms_warp / UNROLL;
  const auto issue = [&](int grp) {
    if (grp < groups) {
      u8* const dst = ring + (grp % STAGES) * SLOT;
      const u8* const src = gq + (long long)grp * WQ_BYTES;
#pragma unroll
      for (int c = lane; c < UNROLL * 16; c += 32) cp_async16(dst + c * 16, src + c * 16, 16);
      if (lane < UNROLL) cp_async16(dst + WQ_BYTES + lane * 16, gs + ((long long)grp * UNROLL + lane) * 16, 16);
    }
    cp_async_commit();
  };
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) issue(st);
  for (int grp = 0; grp < groups; ++grp) {
    issue(grp + STAGES - 1);
    u32 b[UNROLL][DMT][4];
    load_b(arow, grp * UNROLL, b);
    cp_async_wait<STAGES - 1>();
    __syncwarp();  // the other lanes' copies are visible
    const u8* const slot = ring + (grp % STAGES) * SLOT;
    uint2 q[UNROLL];
    u32 lo[UNROLL], hi[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      q[u] = *reinterpret_cast<const uint2*>(slot + u * 256 + lane * 8);
      lo[u] = slot[WQ_BYTES + u * 16 + g];
      hi[u] = slot[WQ_BYTES + u * 16 + g + 8];
    }
    group_mma<true>(q, lo, hi, b, acc[0]);
    __syncwarp();  // every lane is done with the slot before a later issue() refills it
  }
#else
  // One pointer per stream, advanced a group at a time, so that every load of a group is an
  // immediate offset from it: recomputing each 64-bit address from the atom index took 98
  // instructions on the load side of a 4-atom group, against 48 and 6 increments now (SASS,
  // sm_90, BLOCK_M 8, WARPS_K 16, UNROLL 4).
  const u8* wq[DNT];
  const u8* ws[DNT];
#pragma unroll
  for (int j = 0; j < DNT; ++j) {
    wq[j] = Wq + (tile_atoms + j * atoms_per_row) * 256 + lane * 8;
    ws[j] = Ws + (tile_atoms + j * atoms_per_row) * 16 + g;
  }
  for (int a0 = 0; a0 < atoms_warp; a0 += UNROLL) {
    uint2 q[DNT][UNROLL];
    u32 lo[DNT][UNROLL], hi[DNT][UNROLL], b[UNROLL][DMT][4];
#pragma unroll
    for (int j = 0; j < DNT; ++j)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        q[j][u] = ld_stream_v2(wq[j] + u * 256);
        lo[j][u] = ws[j][u * 16];
        hi[j][u] = ws[j][u * 16 + 8];
      }
    load_b(arow, 0, b);
#pragma unroll
    for (int j = 0; j < DNT; ++j) {
      wq[j] += UNROLL * 256;
      ws[j] += UNROLL * 16;
    }
#pragma unroll
    for (int m = 0; m < DMT; ++m) arow[m] += UNROLL * 32;
#pragma unroll
    for (int j = 0; j < DNT; ++j) group_mma<SCALE_VOTE != 0>(q[j], lo[j], hi[j], b, acc[j]);
  }
#endif

  // C fragment: c0, c1 at W row g, activation rows 2t + {0,1}; c2, c3 at W row g + 8.
#if WARPS_K > 1 && BLOCK_REDUCE
  // The warps' sums meet in shared memory and the whole block adds them, each thread one or a
  // few of the 32 x ACC outputs, in the order of the warps (so the bits are those of one warp
  // adding the others' in turn, below).
#pragma unroll
  for (int j = 0; j < DNT; ++j)
#pragma unroll
    for (int m = 0; m < DMT; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) red[wk][lane][(j * DMT + m) * 4 + i] = acc[j][m][i];
  __syncthreads();
  for (int o = threadIdx.x; o < 32 * ACC; o += WARPS_K * 32) {
    const int l = o / ACC, e = o % ACC, j = e / (DMT * 4), m = e / 4 % DMT, i = e % 4;
    const int r = m * 8 + 2 * (l & 3) + (i & 1);
    if (r >= row_count) continue;
    float v = red[0][l][e];
#pragma unroll
    for (int w = 1; w < WARPS_K; ++w) v += red[w][l][e];
    const int n = (blockIdx.x * DNT + j) * 16 + (l >> 2) + (i >> 1) * 8;
    store_out(Y, Yacc, y_row(out_rows, row0, r) * N + n, v);
  }
#else
#if WARPS_K > 1
  // Warp 0 adds the other warps' sums to its own, one warp at a time.
  if (wk > 0) {
#pragma unroll
    for (int j = 0; j < DNT; ++j)
#pragma unroll
      for (int m = 0; m < DMT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) red[wk - 1][lane][(j * DMT + m) * 4 + i] = acc[j][m][i];
  }
  __syncthreads();
  if (wk > 0) return;
#pragma unroll
  for (int w = 0; w < WARPS_K - 1; ++w)
#pragma unroll
    for (int j = 0; j < DNT; ++j)
#pragma unroll
      for (int m = 0; m < DMT; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[j][m][i] += red[w][lane][(j * DMT + m) * 4 + i];
#endif
#pragma unroll
  for (int j = 0; j < DNT; ++j) {
    const int n = (blockIdx.x * DNT + j) * 16 + g;
#pragma unroll
    for (int m = 0; m < DMT; ++m) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = m * 8 + 2 * t + (i & 1);
        if (r < row_count) store_out(Y, Yacc, y_row(out_rows, row0, r) * N + n + (i >> 1) * 8, acc[j][m][i]);
      }
    }
  }
#endif
}

#include "mxfp4_splitk.cuh"
