#include "ops.hpp"

#include <memory>

#include "bf16_gemm.hpp"
#include "bf16_moe.hpp"
#include "cpu_mxfp4_gemm.hpp"
#include "mxfp4_gpu.hpp"

namespace tunebench::bench {

OpList builtin_ops() {
  const bool fold = foldscale_from_env();
  return {std::make_shared<CpuMxfp4GemmOp>(), std::make_shared<Mxfp4GemmOp>(fold), std::make_shared<Mxfp4MoeOp>(fold),
          std::make_shared<Bf16GemmOp>(), std::make_shared<Bf16MoeOp>()};
}

}  // namespace tunebench::bench
