// The split-K finish every GEMM family's binary carries after its main kernel (SPLIT_K > 1).
#pragma once

#include "mxfp4_common.cuh"

// Split-K epilogue: rounds the fp32 sums to bf16 and zeroes the workspace for the next call.
// Four sums a thread (one 16-byte load, an 8-byte and a 16-byte store): the workspace is
// 16-byte aligned and count a multiple of 4 (N % 16 == 0), so the sums' L2 latency is paid
// by a quarter of the threads one element each would take.
extern "C" __global__ void mxfp4_splitk_finish(float* __restrict__ Yacc, u16* __restrict__ Y,
                                               long long count) {
  float4* const acc4 = reinterpret_cast<float4*>(Yacc);
  uint2* const y4 = reinterpret_cast<uint2*>(Y);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count / 4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = acc4[i];
    y4[i] = make_uint2(to_bf16(v.x) | (u32)to_bf16(v.y) << 16, to_bf16(v.z) | (u32)to_bf16(v.w) << 16);
    acc4[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}
