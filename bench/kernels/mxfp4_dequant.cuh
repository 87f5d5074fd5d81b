// mxfp4_dequant_bf16, the dequantize family (DEQUANT_BF16=1): W of one expert to row-major BF16,
// for mxfp4_gemm's dequantize-then-cuBLASLt path of large M and for the grouped op's BF16
// baseline weights. One binary for every ALGO (cuBLASLt's algorithm is chosen at run time);
// FOLDSCALE is its only define.

#include "mxfp4_common.cuh"

#define DQ_ATOMS 8                   // atoms of a block: one a warp
#define DQ_COLS (DQ_ATOMS * 32)      // columns of a block's piece of W
#define DQ_PITCH (DQ_COLS / 2 + 4)   // bf16 pairs a row of the staging tile: 4g + t spreads a store's lanes over the banks

// Wb[N, K] (row-major bf16) = dequant(W). Block (x, y) writes the 16 x 256 piece of rows 16x..
// and columns 256y.., 8 atoms of the strip x. Warp i decodes atom 8y + i whole, as the GEMM
// kernels do (dequant_word: lane l's 8 bytes are its mma.m16n8k16 A fragment, registers j of
// word w at row l / 4 + 8 (j % 2), columns 16w + 8 (j / 2) + 2 (l % 4)), so both paths see the same
// BF16 weights; the pairs go through shared memory so that the stores to Wb are whole rows of
// 512 bytes a warp. Each code is loaded once: an earlier version had every thread load the
// four words of its 8 columns, each word four times, and 64-bit index arithmetic, and was
// bound by the ALU and L2 at 1.5x this one's time (H200, 2026-12-04, docs/perf-mxfp4.md).
extern "C" __global__ void __launch_bounds__(DQ_ATOMS * 32)
    mxfp4_dequant_bf16(const u8* __restrict__ Wq, const u8* __restrict__ Ws, u16* __restrict__ Wb, int N, int K) {
  __shared__ __align__(16) u32 tile[16][DQ_PITCH];  // read back as uint4
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int katoms = K >> 5;
  const int atom = blockIdx.y * DQ_ATOMS + warp;
  if (atom < katoms) {  // the whole warp or none of it: atom_scales' vote sees a converged warp
    const long long a = (long long)blockIdx.x * katoms + atom;
    const uint2 q = *reinterpret_cast<const uint2*>(Wq + a * 256 + lane * 8);
    const int g = lane >> 2, t = lane & 3;
    const AtomScales s = atom_scales(Ws[a * 16 + g], Ws[a * 16 + g + 8]);
    u32 w0[4], w1[4];
    dequant_word(q.x, s, w0);
    dequant_word(q.y, s, w1);
    u32* lo = &tile[g][warp * 16 + t];
    u32* hi = &tile[g + 8][warp * 16 + t];
    lo[0] = w0[0], hi[0] = w0[1], lo[4] = w0[2], hi[4] = w0[3];
    lo[8] = w1[0], hi[8] = w1[1], lo[12] = w1[2], hi[12] = w1[3];
  }
  __syncthreads();
  // 16 rows x 32 pieces of 16 bytes: a warp stores one row's 512 bytes at a time.
#pragma unroll
  for (int i = threadIdx.x; i < 16 * 32; i += DQ_ATOMS * 32) {
    const int row = i >> 5, piece = i & 31, col = blockIdx.y * DQ_COLS + piece * 8;
    if (col < K) {
      *reinterpret_cast<uint4*>(Wb + ((long long)blockIdx.x * 16 + row) * K + col) =
          *reinterpret_cast<const uint4*>(&tile[row][piece * 4]);
    }
  }
}
