#pragma once
// What the files of the MXFP4 GPU ops (mxfp4_*.cpp) share and no client of mxfp4_gpu.hpp needs.

#include <cstdint>
#include <memory>
#include <vector>

#include "kernel_source.hpp"
#include "mxfp4_gpu.hpp"
#include "mxfp4_kernel_axes.hpp"

namespace tunebench::bench {

inline int ceil_div(std::int64_t a, std::int64_t b) { return static_cast<int>((a + b - 1) / b); }

/// Device-resident weights, shared by every workload of the same geometry and seed.
struct DeviceWeights {
  std::int64_t rows = 0, cols = 0;
  DeviceBuffer codes, scales;
};

/// `w` uploaded to the current device.
std::shared_ptr<DeviceWeights> upload_weights(const PackedMxfp4& w);
/// The current device's L2 size in bytes.
std::size_t l2_bytes();
/// The relative L2 error of `out` (BF16 bits) against `ref`, and whether all of it is finite.
CheckResult compare(const std::vector<std::uint16_t>& out, const std::vector<float>& ref);
/// Float reference of `rows` rows of `a` times `w`^T: the CPU GEMM's fp32 sums before rounding.
void reference_rows(const std::uint16_t* a, const mxfp4::Matrix& w, std::int64_t rows, float* out);

/// A workload of either op: what last_output returns.
struct Mxfp4Workload : Workload {
  std::vector<std::uint16_t> out;  ///< the output of the last check
};

/// Dynamic shared memory of a decode config: each warp's ring of STAGES slots of UNROLL atoms.
std::int64_t decode_smem_bytes(const Config& config);
/// The dynamic shared memory a launch of `config`'s main kernel asks for (its family's layout).
std::int64_t launch_smem_bytes(const Config& config);

/// The form a config takes in the JIT cache: the dequantize family's ALGO picks a cuBLASLt
/// algorithm at run time, so all of them share one entry and one binary.
const Config& jit_config(const Config& config);

/// The kernel files of bench/kernels/, embedded when bench is built (kernel_sources.cpp.in).
const KernelFiles& mxfp4_kernel_files();

}  // namespace tunebench::bench
