// Shared by every MXFP4 kernel file (bench/kernels/): the E2M1 and E8M0 decode of the packed
// weights, cp.async, the bf16 mma.sync and the rounding to bf16. The host (bench/mxfp4_jit.cpp)
// compiles one kernel file per family, this header inlined where the file includes it, with
// FOLDSCALE defined (and MOE and the family's axes for the GEMM families).
//
// The weights are in the repacked layout of bench/mxfp4_gpu.hpp: for each expert, 16-row x
// 32-column atoms [N/16][K/32], each 32 lanes x 8 bytes of E2M1 codes arranged so that lane l
// holds exactly its mma.m16n8k16 A-fragment values, and 16 E8M0 scales per atom (one per row).
// W is the mma's A operand (16 rows of N per mma) and the activations its B operand (8 rows
// per mma), so a decode batch of 1..8 tokens wastes no tensor-core work on padding rows of M.
#pragma once

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

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
