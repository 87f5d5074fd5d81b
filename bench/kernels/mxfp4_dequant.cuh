// mxfp4_dequant_bf16, the dequantize family (DEQUANT_BF16=1): W of one expert to row-major BF16,
// for mxfp4_gemm's dequantize-then-cuBLASLt path of large M and for the grouped op's BF16
// baseline weights. One binary for every ALGO (cuBLASLt's algorithm is chosen at run time);
// FOLDSCALE is its only define.

#include "mxfp4_common.cuh"

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
