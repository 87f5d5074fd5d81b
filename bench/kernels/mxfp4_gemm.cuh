// MXFP4-weight GEMM for Hopper (sm_90) with mma.sync, and with wgmma (sm_90a) for many rows,
// compiled per config by NVRTC.
//
//   Y[rows, N] (bf16) = A[rows, K] (bf16) . dequant(W_e)[N, K]^T
//
// Dense (MOE == 0): one expert, rows = M, A row r and Y row r are token r.
// Grouped MoE (MOE == 1): a tile list names, per block row, an expert and a run of routed
// pairs sorted by expert; a_rows[] gives each pair's A row (its token for w13, the pair itself
// for w2) and out_rows[] its Y row (the pair).
//
// The weights are in the repacked layout of bench/mxfp4_gpu.hpp: for each expert, 16-row x
// 32-column atoms [N/16][K/32], each 32 lanes x 8 bytes of E2M1 codes arranged so that lane l
// holds exactly its mma.m16n8k16 A-fragment values, and 16 E8M0 scales per atom (one per row).
// W is the mma's A operand (16 rows of N per mma) and the activations its B operand (8 rows
// per mma), so a decode batch of 1..8 tokens wastes no tensor-core work on padding rows of M.
//
// Config (all -D): BLOCK_M (rows per block, multiple of 8), BLOCK_N (multiple of 16 * WARPS /
// WARPS_K), BLOCK_K (multiple of 32 * WARPS_K), WARPS, WARPS_K (warps sharing one W tile, each
// taking every WARPS_K-th 32-column atom of a K tile; their sums meet in shared memory at the
// end), STAGES (>= 2, cp.async pipeline depth), SPLIT_K (K ranges reduced through fp32 atomics
// into a workspace, then mxfp4_splitk_finish), FOLDSCALE.
//
// With -DDEQUANT_ONLY=1 (and FOLDSCALE) the file holds mxfp4_dequant_bf16 instead: W of one
// expert to row-major BF16, for the dequantize-then-cuBLASLt path of large M. With -DDECODE=1
// (BLOCK_M, WARPS_K, UNROLL, SPLIT_K, STAGES, SCALE_VOTE, FOLDSCALE, optional BLOCK_N) it holds mxfp4_decode
// in place of mxfp4_gemm: both ops' kernel for few rows (below). With -DWGMMA=1 it holds
// mxfp4_wgmma: both ops' kernel for many rows on sm_90a's warpgroup MMA (below).
//
// -DLAUNCH_SMEM_BYTES (optional; bench/mxfp4_gpu.cpp always passes it) is the dynamic shared
// memory the host will launch the main kernel with; each kernel static_asserts that it equals
// its own layout's, so the host's mirror of these macros cannot drift unnoticed.

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define WARPS_N (WARPS / WARPS_K)
#define NT (BLOCK_N / 16 / WARPS_N)  // 16-row W tiles per warp
#define MT (BLOCK_M / 8)           // 8-row activation tiles per block
#define KA (BLOCK_K / 32)          // 32-column atoms per K tile
#define LDA (BLOCK_K + 8)          // padded smem row (bf16): ldmatrix rows hit distinct banks
#define A_STAGE (BLOCK_M * LDA * 2)
#define WQ_STAGE (BLOCK_N / 16 * KA * 256)
#define WS_STAGE (BLOCK_N / 16 * KA * 16)
#define STAGE_BYTES (A_STAGE + WQ_STAGE + WS_STAGE)

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// d = a * b + (-0) on bf16 pairs: exact for the power-of-two products of dequantization, and
// -0 keeps the sign of zero products.
__device__ __forceinline__ u32 bmul2(u32 a, u32 b) {
  u32 d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  return d;
}

// Register j (0..3) of a word of codes, in the bit layout of pack_for_gpu (bench/mxfp4_gpu.hpp):
// two bf16 values equal to their codes' values times 2^-126 (sign to bit 15/31, exponent and
// mantissa bits to 8..6 / 24..22). The layout puts every code's bits where one rotation (two
// for j = 3) and a mask land them: 9 instructions a word, where nibble-packed codes took 15.
__device__ __forceinline__ u32 rotl(u32 x, int s) { return __funnelshift_l(x, x, s); }

__device__ __forceinline__ u32 raw_pair(u32 q, int j) {
  switch (j) {
    case 0: return q & 0x81C081C0u;
    case 1: return rotl(q, 4) & 0x81C081C0u;
    case 2: return rotl(q, 10) & 0x81C081C0u;
    default: return (rotl(q, 6) & 0x80C080C0u) | (rotl(q, 30) & 0x01000100u);
  }
}

#define BIAS2 0x7E807E80u  // bf16 pair 2^126, 2^126: undoes the 2^-126 of raw_pair

// bf16 of 2^(s-127), the E8M0 scale (0xFF: NaN; 0: 2^-127, a bf16 subnormal).
__device__ __forceinline__ u32 scale_bf16(u32 s) {
  return s == 0xFFu ? 0x7FC0u : (s == 0u ? 0x0040u : (s << 7));
}

// The scales of a lane's two rows of an atom (g: lo, g + 8: hi) as bf16 pairs, and with
// FOLDSCALE the folded pairs and whether the whole warp can use them. Call with the warp
// converged (the vote).
struct AtomScales {
  u32 lo, hi, fold_lo, fold_hi;
  bool folded;
};

__device__ __forceinline__ AtomScales atom_scales(u32 lo_code, u32 hi_code) {
  AtomScales s{scale_bf16(lo_code), scale_bf16(hi_code), 0u, 0u, false};
  s.lo |= s.lo << 16;
  s.hi |= s.hi << 16;
#if FOLDSCALE
  // 2^(s-1) as bf16 has exponent field s + 126; NaN scales stay NaN.
  s.folded = __all_sync(0xffffffffu, (lo_code <= 128u || lo_code == 0xFFu) && (hi_code <= 128u || hi_code == 0xFFu));
  s.fold_lo = lo_code == 0xFFu ? 0x7FC0u : (lo_code + 126u) << 7;
  s.fold_hi = hi_code == 0xFFu ? 0x7FC0u : (hi_code + 126u) << 7;
  s.fold_lo |= s.fold_lo << 16;
  s.fold_hi |= s.fold_hi << 16;
#endif
  return s;
}

// The unfolded decode of a raw pair: the 2^126 correction, then the scale pair.
__device__ __forceinline__ u32 unfolded(u32 raw, u32 scale) { return bmul2(bmul2(raw, BIAS2), scale); }

// Four A-fragment registers (a0..a3) of one k16 step from one 32-bit word of codes (raw_pair);
// a0, a2 are row g (scale lo), a1, a3 row g+8 (scale hi).
__device__ __forceinline__ void dequant_word(u32 q, const AtomScales& s, u32 (&a)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const u32 raw = raw_pair(q, j);
#if FOLDSCALE
    // One multiply: the 2^126 correction pre-multiplied into the block scale, valid while
    // 2^(s-1) fits bf16 (s <= 128); blocks with larger scales take the two-multiply path.
    a[j] = s.folded ? bmul2(raw, (j & 1) ? s.fold_hi : s.fold_lo) : unfolded(raw, (j & 1) ? s.hi : s.lo);
#else
    a[j] = unfolded(raw, (j & 1) ? s.hi : s.lo);
#endif
  }
}

// The common case of a scale code, without special cases: with FOLDSCALE, codes up to 128
// (2^(s-1) fits bf16), else 1..254 (neither the subnormal 2^-127 nor NaN). fast_pair gives the
// bf16 pair that dequant_word_fast multiplies by; both paths give the bits of dequant_word.
__device__ __forceinline__ bool fast_scale(u32 c) {
#if FOLDSCALE
  return c <= 128u;
#else
  return c - 1u < 254u;
#endif
}

__device__ __forceinline__ u32 fast_pair(u32 c) {
#if FOLDSCALE
  return (c + 126u) * 0x00800080u;  // 2^(s-1) in both halves
#else
  return c * 0x00800080u;  // 2^(s-127) in both halves
#endif
}

__device__ __forceinline__ void dequant_word_fast(u32 q, u32 lo, u32 hi, u32 (&a)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const u32 raw = raw_pair(q, j);
#if FOLDSCALE
    a[j] = bmul2(raw, (j & 1) ? hi : lo);
#else
    a[j] = unfolded(raw, (j & 1) ? hi : lo);
#endif
  }
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ u16 to_bf16(float x) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(x));
  return h;
}

#if !DEQUANT_ONLY
// The rows of this block row: dense, BLOCK_M rows from blockIdx.y * BLOCK_M; grouped, one tile
// of the list (an expert and a run of its routed pairs).
struct BlockRows {
  int expert, row0, count;
};

__device__ __forceinline__ BlockRows block_rows(const int4* __restrict__ tiles, int rows) {
#if MOE
  const int4 tile = tiles[blockIdx.y];
  return {tile.x, tile.y, tile.z};
#else
  const int row0 = blockIdx.y * BLOCK_M;
  return {0, row0, min(BLOCK_M, rows - row0)};
#endif
}

// The A row and the Y row of the block's row r (r < count).
__device__ __forceinline__ int a_row(const int* __restrict__ a_rows, int row0, int r) {
#if MOE
  return a_rows[row0 + r];
#else
  return row0 + r;
#endif
}

__device__ __forceinline__ long long y_row(const int* __restrict__ out_rows, int row0, int r) {
#if MOE
  return out_rows[row0 + r];
#else
  return row0 + r;
#endif
}

// One output element: rounded to bf16, or with SPLIT_K > 1 added to the fp32 workspace.
__device__ __forceinline__ void store_out(u16* __restrict__ Y, float* __restrict__ Yacc, long long i, float v) {
#if SPLIT_K > 1
  atomicAdd(Yacc + i, v);
#else
  Y[i] = to_bf16(v);
#endif
}
#endif

#if DECODE
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
#ifndef BLOCK_N
#define BLOCK_N 16
#endif
#define DNT (BLOCK_N / 16)  // 16-row W tiles per block
// BLOCK_REDUCE (optional, default 0): how the WARPS_K warps' sums are added. 0: warp 0 adds the
// others' to its own, a chain of (WARPS_K - 1) x DNT x DMT x 4 shared loads and adds a lane;
// 1: every thread of the block adds one or a few of the outputs, in the same order (the same
// bits). 1 also frees warp 0's registers of the epilogue: the BLOCK_N 32, WARPS_K 16, UNROLL 2
// config takes 52 registers instead of 64, and EP M = 8 runs 3-5% faster; with few warps
// (WARPS_K 2-4) it was 1-5% slower (H200, 2026-12-01, docs/perf-mxfp4.md).
#ifndef BLOCK_REDUCE
#define BLOCK_REDUCE 0
#endif
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

#elif !DEQUANT_ONLY
// One lane's codes of one 16-row W tile and 32-column atom of the stage (atom index tile16 * KA
// + ka) and the E8M0 scale codes of its rows g and g + 8.
struct AtomCodes {
  uint2 q;
  u32 lo, hi;
};

__device__ __forceinline__ AtomCodes load_atom(const u8* wq_s, const u8* ws_s, int atom, int lane) {
  const int g = lane >> 2;
  return {*reinterpret_cast<const uint2*>(wq_s + atom * 256 + lane * 8), ws_s[atom * 16 + g], ws_s[atom * 16 + g + 8]};
}

// The atom's A fragments for both k16 steps.
__device__ __forceinline__ void dequant_atom(const AtomCodes& c, u32 (&a)[2][4]) {
  const AtomScales sc = atom_scales(c.lo, c.hi);
  dequant_word(c.q.x, sc, a[0]);
  dequant_word(c.q.y, sc, a[1]);
}

__device__ __forceinline__ void tile_w_fragment(const u8* wq_s, const u8* ws_s, int atom, int lane, u32 (&a)[2][4]) {
  dequant_atom(load_atom(wq_s, ws_s, atom, lane), a);
}

#endif

#if WGMMA
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
#ifndef MMA_N
#define MMA_N 64
#endif
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

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins the accumulators in place across the asynchronous MMAs: no copy of them may move past
// a fence or a wait.
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading
// and stride byte offsets, each in 16-byte units; base offset 0, no swizzle.
__device__ __forceinline__ unsigned long long smem_desc(u32 addr, u32 leading, u32 stride) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)((leading >> 4) & 0x3FFFu) << 16 |
         (unsigned long long)((stride >> 4) & 0x3FFFu) << 32;
}

// d += a (64 x 16, registers) . b (16 x N, shared memory), fp32 accumulate: wgmma m64nNk16 with
// A from registers, for the N (activation rows) of one instruction, MMA_N.
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const u32 (&a)[4], unsigned long long b);
template <>
__device__ __forceinline__ void wgmma_rs<64>(float (&d)[32], const u32 (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <>
__device__ __forceinline__ void wgmma_rs<128>(float (&d)[64], const u32 (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
template <>
__device__ __forceinline__ void wgmma_rs<256>(float (&d)[128], const u32 (&a)[4], unsigned long long b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// MMA_OVERLAP (optional, default 0). 0: each K tile's MMAs are waited for before the block's
// barrier, and the stage of tile kt - 1 is refilled with tile kt + STAGES - 1. 1: the last
// atom's MMAs of tile kt - 1 still run while tile kt starts (its first atom dequantized, its
// first MMAs issued), so the stage refilled is tile kt - 2's, with tile kt + STAGES - 2: one
// tile less of prefetch for no drained tensor pipe at each tile (BLOCK_K a multiple of 64, so
// that a tile's first atom uses the registers of the previous tile's second-to-last one).
// MIN_BLOCKS (optional, default 1): blocks an SM must hold at once (a register bound).
#ifndef MMA_OVERLAP
#define MMA_OVERLAP 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
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

#elif !DEQUANT_ONLY && !DECODE
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

#endif

#if !DEQUANT_ONLY
// Split-K epilogue: rounds the fp32 sums to bf16 and zeroes the workspace for the next call.
extern "C" __global__ void mxfp4_splitk_finish(float* __restrict__ Yacc, u16* __restrict__ Y,
                                               long long count) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    Y[i] = to_bf16(Yacc[i]);
    Yacc[i] = 0.0f;
  }
}
#else

// Wb[N, K] (row-major bf16) = dequant(W): thread i writes the 8 columns 8*(i % (K/8)).. of row
// i / (K/8) with one 16-byte store, so a warp writes 512 contiguous bytes. Those 8 values sit
// in register j = (r / 8 % 2) | (c / 8 % 2) << 1 of word c / 16 % 2 of the 4 lanes 4*(r % 8)..
// 4*(r % 8) + 3 of their atom (columns 2t, 2t + 1 in lane t's pair), decoded exactly as the
// GEMM kernel decodes them, so both paths see the same BF16 weights.
extern "C" __global__ void mxfp4_dequant_bf16(const u8* __restrict__ Wq, const u8* __restrict__ Ws,
                                              u16* __restrict__ Wb, int N, int K) {
  const long long chunks = (long long)N * (K / 8);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < chunks;
       i += (long long)gridDim.x * blockDim.x) {
    const int r = (int)(i / (K / 8)), c0 = (int)(i % (K / 8)) * 8;
    const long long atom = (long long)(r / 16) * (K / 32) + c0 / 32;
    const int cc = c0 % 32, word = cc >> 4, j = ((r >> 3) & 1) | (((cc >> 3) & 1) << 1);
    const u8* q = Wq + atom * 256 + (r & 7) * 32 + word * 4;
    const u32 s_code = Ws[atom * 16 + (r & 15)];
    u32 s2 = scale_bf16(s_code);
    s2 |= s2 << 16;
    u32 out[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const u32 raw = raw_pair(*reinterpret_cast<const u32*>(q + t * 8), j);
#if FOLDSCALE
      if (s_code <= 128u || s_code == 0xFFu) {
        u32 fold = s_code == 0xFFu ? 0x7FC0u : (s_code + 126u) << 7;
        fold |= fold << 16;
        out[t] = bmul2(raw, fold);
        continue;
      }
#endif
      out[t] = unfolded(raw, s2);
    }
    *reinterpret_cast<uint4*>(Wb + (long long)r * K + c0) = make_uint4(out[0], out[1], out[2], out[3]);
  }
}
#endif
