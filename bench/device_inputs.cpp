// fill_random_mxfp4 and fill_random_bf16: random_mxfp4 and random_bf16 (inputs.cpp) on the
// device, word for word.
#include "device_inputs.hpp"

#include <algorithm>
#include <stdexcept>

#include "inputs.hpp"
#include "mxfp4.hpp"
#include "tunebench/cuda.hpp"

namespace tunebench::bench {

const std::string& random_fill_source() {
  // random_mxfp4 draws codes in chunks of 2^20 bytes, chunk c from splitmix64 seeded with the
  // first output of splitmix64(seed * G + 7 + (stream << 40) + c), stream 0 for codes and 1 for
  // scales; a code chunk's draw j fills bytes 8j..8j+7 (little-endian), a scale chunk's draw j
  // byte j (lo + Lemire's multiply-shift over the span). Draw j of a generator seeded with s is
  // mix(s + (j + 1) * G). Codes are a whole number of words: cols % 32 == 0.
  static const std::string source = R"(
typedef unsigned long long u64;
#define GOLDEN 0x9E3779B97F4A7C15ull
#define CHUNK_SHIFT 20
__device__ __forceinline__ u64 mix(u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ u64 chunk_seed(u64 seed, u64 stream, u64 chunk) {
  return mix(seed * GOLDEN + 7ull + (stream << 40) + chunk + GOLDEN);
}
extern "C" __global__ void random_mxfp4_codes(u64* __restrict__ out, long long words, u64 seed) {
  for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
       w += (long long)gridDim.x * blockDim.x) {
    const u64 byte = (u64)w * 8ull;
    const u64 s = chunk_seed(seed, 0ull, byte >> CHUNK_SHIFT);
    out[w] = mix(s + ((byte & ((1ull << CHUNK_SHIFT) - 1ull)) / 8ull + 1ull) * GOLDEN);
  }
}
extern "C" __global__ void random_mxfp4_scales(unsigned char* __restrict__ out, long long count, u64 seed,
                                               unsigned lo, unsigned span) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const u64 s = chunk_seed(seed, 1ull, (u64)i >> CHUNK_SHIFT);
    const u64 r = mix(s + (((u64)i & ((1ull << CHUNK_SHIFT) - 1ull)) + 1ull) * GOLDEN);
    out[i] = (unsigned char)(lo + (((r >> 32) * span) >> 32));
  }
}
// random_bf16: value i is draw i + 1 of splitmix64 seeded with seed * 0x2545F4914F6CDD1D + 1,
// mapped to [-1, 1) on a 2^-24 grid as Rng::uniform does (every step exact but the final add,
// rounded to nearest as on the host), then rounded to BF16 to nearest even.
extern "C" __global__ void random_bf16_values(unsigned short* __restrict__ out, long long count, u64 seed) {
  const u64 start = seed * 0x2545F4914F6CDD1Dull + 1ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const u64 r = mix(start + ((u64)i + 1ull) * GOLDEN);
    const float x = __fadd_rn(-1.0f, __fmul_rn(__fmul_rn(2.0f, (float)(r >> 40)), 0x1p-24f));
    unsigned u = __float_as_uint(x);
    u += 0x7FFFu + ((u >> 16) & 1u);
    out[i] = (unsigned short)(u >> 16);
  }
}
)";
  return source;
}

namespace {

CompileRequest fill_request(const std::string& arch) {
  return {random_fill_source(), "random_fill.cu", {"-std=c++17"}, arch};
}

const JitKernelCache& fill_kernels() {
  static const JitKernelCache cache("random_fill", [](const Config&, const std::string& arch) {
    return JitBuild{
        fill_request(arch),
        {JitKernel{"random_mxfp4_codes"}, JitKernel{"random_mxfp4_scales"}, JitKernel{"random_bf16_values"}}};
  });
  return cache;
}

unsigned grid_for(long long items, int threads) {
  return static_cast<unsigned>(std::clamp<long long>((items + threads - 1) / threads, 1, 132 * 16));
}

}  // namespace

void fill_random_mxfp4(void* codes, void* scales, std::int64_t rows, std::int64_t cols, std::uint64_t seed,
                       std::uint8_t scale_lo, std::uint8_t scale_hi, cudaStream_t stream) {
  check_random_mxfp4_args(rows, cols, scale_lo, scale_hi);
  const JitKernels& k = fill_kernels().get(Config{});
  constexpr int kThreads = 256;
  long long words = rows * cols / 2 / 8, count = rows * cols / mxfp4::kBlock;
  unsigned lo = scale_lo, span = scale_hi - scale_lo + 1u;
  void* code_args[] = {&codes, &words, &seed};
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.kernel(0)), dim3(grid_for(words, kThreads)),
                                        dim3(kThreads), code_args, 0, stream));
  void* scale_args[] = {&scales, &count, &seed, &lo, &span};
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.kernel(1)), dim3(grid_for(count, kThreads)),
                                        dim3(kThreads), scale_args, 0, stream));
}

void fill_random_bf16(void* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  if (count <= 0) throw std::invalid_argument("random_bf16: bad count " + std::to_string(count));
  const JitKernels& k = fill_kernels().get(Config{});
  constexpr int kThreads = 256;
  long long n = count;
  void* args[] = {&out, &n, &seed};
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.kernel(2)), dim3(grid_for(n, kThreads)),
                                        dim3(kThreads), args, 0, stream));
}

std::vector<std::uint16_t> download_bf16(const DeviceBuffer& values) {
  std::vector<std::uint16_t> out(values.bytes() / 2);
  values.download(out.data(), out.size() * 2);
  return out;
}

CompileResult compile_random_fill(const KernelCompiler& compiler, const std::string& arch) {
  return compiler.compile(fill_request(arch));
}

}  // namespace tunebench::bench
