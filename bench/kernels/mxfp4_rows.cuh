// The rows a block of a GEMM kernel works on, dense (MOE == 0: one expert, rows = M, A row r
// and Y row r are token r) or grouped (MOE == 1: a tile list names, per block row, an expert and
// a run of routed pairs sorted by expert; a_rows[] gives each pair's A row, its token for w13,
// the pair itself for w2, and out_rows[] its Y row, the pair), and the store of one output.
#pragma once

#include "mxfp4_common.cuh"

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
