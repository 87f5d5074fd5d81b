#include "ops.hpp"

#include <memory>

#include "cpu_mxfp4_gemm.hpp"

namespace tunebench::bench {

OpList builtin_ops() { return {std::make_shared<CpuMxfp4GemmOp>()}; }

}  // namespace tunebench::bench
