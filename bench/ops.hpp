#pragma once
// The ops bench registers.

#include "tunebench/op.hpp"

namespace tunebench::bench {

/// Every op built into bench, in registration order: cpu_mxfp4_gemm, mxfp4_gemm, mxfp4_moe,
/// bf16_gemm. The MXFP4 ops take their dequant variant from FLAGGEMS_MXFP4_FOLDSCALE; a bad
/// value throws std::invalid_argument.
OpList builtin_ops();

}  // namespace tunebench::bench
