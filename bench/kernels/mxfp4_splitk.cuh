// The split-K finish every GEMM family's binary carries after its main kernel (SPLIT_K > 1).
#pragma once

#include "mxfp4_common.cuh"

// Split-K epilogue: rounds the fp32 sums to bf16 and zeroes the workspace for the next call.
extern "C" __global__ void mxfp4_splitk_finish(float* __restrict__ Yacc, u16* __restrict__ Y,
                                               long long count) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    Y[i] = to_bf16(Yacc[i]);
    Yacc[i] = 0.0f;
  }
}
