// The JIT kernel cache's load side on a real GPU: a config loaded once and launched, a
// kernel opted in to more than 48 KiB of dynamic shared memory, a config that does not compile.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "tunebench/cuda.hpp"
#include "tunebench/device.hpp"
#include "tunebench/nvrtc.hpp"

namespace {

using tunebench::Config;
using tunebench::JitBuild;
using tunebench::JitKernel;
using tunebench::JitKernelCache;

const char* const kSource = R"(
extern "C" __global__ void fill(int* out, int value) {
#ifdef BROKEN
  undeclared_function();
#endif
  out[blockIdx.x * BLOCK + threadIdx.x] = value;
}
extern "C" __global__ void fill_shared(int* out, int value) {
  extern __shared__ int tile[];
  tile[threadIdx.x * (SMEM / 4 / BLOCK)] = value;
  __syncthreads();
  out[blockIdx.x * BLOCK + threadIdx.x] = tile[threadIdx.x * (SMEM / 4 / BLOCK)] + 1;
}
)";

constexpr int kSmem = 96 * 1024;

class GpuJit : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto probe = tunebench::probe_gpus();
    if (!probe.available()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
  }
};

tunebench::JitBuilder builder(std::atomic<int>* calls) {
  return [calls](const Config& config, const std::string& arch) {
    ++*calls;
    tunebench::CompileRequest req{kSource,
                                  "fill.cu",
                                  {"-DBLOCK=" + std::to_string(config.get("BLOCK")), "-DSMEM=" + std::to_string(kSmem)},
                                  arch};
    if (config.has("BROKEN")) req.options.push_back("-DBROKEN=1");
    return JitBuild{req, {JitKernel{"fill"}, JitKernel{"fill_shared", kSmem}}};
  };
}

std::vector<int> launch(cudaKernel_t kernel, int block, int value, int smem) {
  constexpr int kBlocks = 4;
  tunebench::DeviceBuffer out(sizeof(int) * kBlocks * static_cast<std::size_t>(block));
  void* p = out.get();
  void* args[] = {&p, &value};
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(kBlocks),
                                        dim3(static_cast<unsigned>(block)), args, static_cast<std::size_t>(smem),
                                        nullptr));
  TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> host(static_cast<std::size_t>(kBlocks * block));
  out.download(host.data(), out.bytes());
  return host;
}

}  // namespace

TEST_F(GpuJit, EachConfigIsLoadedOnceAndRuns) {
  std::atomic<int> calls{0};
  const JitKernelCache jit("fill", builder(&calls), std::filesystem::path{});
  for (int block : {128, 256}) {
    const Config config{{"BLOCK", block}};
    const tunebench::JitKernels& first = jit.get(config);
    EXPECT_EQ(&jit.get(config), &first);
    ASSERT_EQ(first.size(), 2u);
    EXPECT_EQ(first.dynamic_smem_bytes(0), 0);
    EXPECT_EQ(first.dynamic_smem_bytes(1), kSmem);
    for (int v : launch(first.kernel(0), block, 7, 0)) ASSERT_EQ(v, 7);
    // Above 48 KiB the launch fails unless the cache opted the kernel in.
    for (int v : launch(first.kernel(1), block, 7, kSmem)) ASSERT_EQ(v, 8);
  }
  EXPECT_EQ(calls.load(), 2);
}

TEST_F(GpuJit, AConfigThatDoesNotCompileThrowsCompileErrorEachTime) {
  std::atomic<int> calls{0};
  const JitKernelCache jit("fill", builder(&calls), std::filesystem::path{});
  const Config broken{{"BLOCK", 128}, {"BROKEN", 1}};
  EXPECT_THROW(jit.get(broken), tunebench::CompileError);
  EXPECT_THROW(jit.get(broken), tunebench::CompileError);
  EXPECT_EQ(calls.load(), 2);  // a failure is not remembered
  EXPECT_NO_THROW(jit.get(Config{{"BLOCK", 128}}));
}
