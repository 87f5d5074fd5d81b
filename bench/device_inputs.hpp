#pragma once
// Random inputs made on the device, byte for byte those the host generators of inputs.hpp make:
// gigabytes of expert weights in milliseconds instead of seconds of host time and a copy.

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tunebench/cuda.hpp"
#include "tunebench/nvrtc.hpp"

namespace tunebench::bench {

/// Writes random_mxfp4(rows, cols, seed, scale_lo, scale_hi)'s codes (rows * cols / 2 bytes)
/// to `codes` and its scales (rows * cols / 32 bytes) to `scales`, both device memory, on
/// `stream` (enqueued; nothing waits). The same bytes because splitmix64's n-th output is a
/// function of its seed and n alone, so every 8-byte word of random_mxfp4's chunked generators
/// can be made by its own thread. The kernels are compiled once per process (NVRTC, kept in the
/// kernel cache). Throws std::invalid_argument for the arguments random_mxfp4 refuses,
/// CompileError or CudaError.
void fill_random_mxfp4(void* codes, void* scales, std::int64_t rows, std::int64_t cols, std::uint64_t seed,
                       std::uint8_t scale_lo, std::uint8_t scale_hi, cudaStream_t stream);

/// Writes random_bf16(count, seed)'s values (count BF16 values, 2 bytes each) to `out`, device
/// memory, on `stream` (enqueued; nothing waits): value i is the (i + 1)-th output of
/// splitmix64, so each thread makes its own. A prefill key's activations (up to hundreds of MB)
/// then cost no host time and no copy. Throws std::invalid_argument for count <= 0,
/// CompileError or CudaError.
void fill_random_bf16(void* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream);

/// The BF16 values in `values` (device memory, bytes() / 2 of them), copied to the host
/// (synchronous). The CPU references read device-made activations through it, once per
/// workload. Throws CudaError.
std::vector<std::uint16_t> download_bf16(const DeviceBuffer& values);

/// The CUDA source of fill_random_mxfp4's and fill_random_bf16's kernels (random_mxfp4_codes,
/// random_mxfp4_scales, random_bf16_values).
const std::string& random_fill_source();

/// Compiles fill_random_mxfp4's kernels for `arch` with `compiler` (CI compiles them without a
/// GPU). Returns the result; throws as KernelCompiler::compile.
CompileResult compile_random_fill(const KernelCompiler& compiler, const std::string& arch);

}  // namespace tunebench::bench
