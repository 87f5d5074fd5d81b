// The JIT kernel cache's compile side, which needs NVRTC but no GPU: configs compiled once into
// the disk cache (in parallel by precompile), and a config that does not compile reported as a
// CompileError with its log. Loading is in gpu_jit_test.cpp.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "mxfp4_gpu.hpp"
#include "tunebench/nvrtc.hpp"

namespace fs = std::filesystem;
using tunebench::CompileError;
using tunebench::Config;
using tunebench::JitBuild;
using tunebench::JitKernel;
using tunebench::JitKernelCache;

namespace {

const char* const kSource = R"(
extern "C" __global__ void __launch_bounds__(BLOCK) fill(int* out, int value) {
#ifdef BROKEN
  undeclared_function();
#endif
  out[blockIdx.x * BLOCK + threadIdx.x] = value;
}
)";

fs::path scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("tunebench_jit_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// The build of the test kernel; counts its calls.
tunebench::JitBuilder fill_builder(std::atomic<int>* calls) {
  return [calls](const Config& config, const std::string& arch) {
    ++*calls;
    tunebench::CompileRequest req{kSource, "fill.cu", {"-DBLOCK=" + std::to_string(config.get("BLOCK"))}, arch};
    if (config.has("BROKEN")) req.options.push_back("-DBROKEN=1");
    return JitBuild{req, {JitKernel{"fill"}}};
  };
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST(JitKernelCache, PrecompileFillsTheDiskCacheOncePerConfig) {
  const auto dir = scratch("precompile");
  std::atomic<int> calls{0};
  const JitKernelCache jit("fill", fill_builder(&calls), dir);
  const std::vector<Config> configs = {Config{{"BLOCK", 128}}, Config{{"BLOCK", 256}}, Config{{"BLOCK", 128}}};
  jit.precompile(configs, "sm_90", 4);
  EXPECT_EQ(calls.load(), 2);  // the repeated config is compiled once
  const auto files = files_in(dir);
  ASSERT_EQ(files.size(), 2u);
  for (const auto& f : files) EXPECT_EQ(fs::path(f).extension(), ".cubin") << f;  // no temporary file left
  const auto a = jit.compile(Config{{"BLOCK", 128}}, "sm_90");
  const auto b = jit.compile(Config{{"BLOCK", 256}}, "sm_90");
  EXPECT_TRUE(a.ok && a.from_cache);
  EXPECT_TRUE(b.ok && b.from_cache);
  EXPECT_NE(a.key, b.key);
  EXPECT_FALSE(a.cubin.empty());
  EXPECT_EQ(jit.label(), "fill");
  fs::remove_all(dir);
}

TEST(JitKernelCache, AConfigThatDoesNotCompileIsACompileErrorWithTheLog) {
  const auto dir = scratch("broken");
  std::atomic<int> calls{0};
  const JitKernelCache jit("fill", fill_builder(&calls), dir);
  const Config broken{{"BLOCK", 128}, {"BROKEN", 1}};
  jit.precompile({broken}, "sm_90", 2);  // failures are left for get() and compile() to report
  EXPECT_FALSE(fs::exists(dir) && !fs::is_empty(dir));
  try {
    jit.compile(broken, "sm_90");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("compile_failed: fill: ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_function"), std::string::npos) << what;
    // The log has what what() shows and more (NVRTC's summary line, at least).
    EXPECT_NE(e.log().find("undeclared_function"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find('\n'), std::string::npos) << e.log();
    const CompileError copy = e;  // exceptions are copied when thrown on: the log goes along
    EXPECT_EQ(copy.log(), e.log());
  }
  fs::remove_all(dir);
}

TEST(JitKernelCache, CompileErrorIsOneLineAndKeepsTheWholeLog) {
  const CompileError labelled("hbm_read", "first: error\nsecond\nthird");
  EXPECT_STREQ(labelled.what(), "compile_failed: hbm_read: first: error");
  EXPECT_EQ(labelled.log(), "first: error\nsecond\nthird");
  const CompileError plain("", "error: too many registers");
  EXPECT_STREQ(plain.what(), "compile_failed: error: too many registers");
  const std::runtime_error& base = plain;
  EXPECT_STREQ(base.what(), plain.what());
}

TEST(JitKernelCache, WithoutADiskCacheCompilesEveryTimeAndPrecompileDoesNothing) {
  std::atomic<int> calls{0};
  const JitKernelCache jit("fill", fill_builder(&calls), fs::path{});
  jit.precompile({Config{{"BLOCK", 128}}}, "sm_90", 2);
  EXPECT_EQ(calls.load(), 0);
  const auto r = jit.compile(Config{{"BLOCK", 128}}, "sm_90");
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.from_cache);
}

// The ops' own caches: the folder comes from TUNEBENCH_KERNEL_CACHE when first needed, and the
// MXFP4 ops keep one binary for every ALGO of the dequantize family.
TEST(JitKernelCache, OpsPrecompileIntoTheKernelCacheFolder) {
  const auto dir = scratch("ops");
  const char* before = std::getenv("TUNEBENCH_KERNEL_CACHE");
  const std::string saved = before ? before : "";
  const tunebench::bench::Mxfp4GemmOp gemm(false);  // made before the variable is set
  ASSERT_EQ(::setenv("TUNEBENCH_KERNEL_CACHE", dir.c_str(), 1), 0);
  const auto device = tunebench::sm90_reference_device();
  gemm.precompile({Config{{"DEQUANT_BF16", 1}, {"ALGO", 0}}, Config{{"DEQUANT_BF16", 1}, {"ALGO", 3}}}, device, 2);
  EXPECT_EQ(files_in(dir).size(), 1u);
  if (before) {
    ::setenv("TUNEBENCH_KERNEL_CACHE", saved.c_str(), 1);
  } else {
    ::unsetenv("TUNEBENCH_KERNEL_CACHE");
  }
  fs::remove_all(dir);
}

TEST(JitKernelCache, Mxfp4BuildsNameTheKernelsEachFamilyLoads) {
  using tunebench::bench::mxfp4_jit_build;
  const auto dequant = mxfp4_jit_build(Config{{"DEQUANT_BF16", 1}, {"ALGO", 2}}, false, false, "sm_90");
  ASSERT_EQ(dequant.kernels.size(), 1u);
  EXPECT_EQ(dequant.kernels[0].name, "mxfp4_dequant_bf16");
  EXPECT_EQ(dequant.request.arch, "sm_90");
  const Config decode{{"DECODE", 1},  {"BLOCK_M", 8}, {"WARPS_K", 4},   {"UNROLL", 2},
                      {"SPLIT_K", 1}, {"STAGES", 2},  {"SCALE_VOTE", 1}};
  const auto d = mxfp4_jit_build(decode, true, false, "sm_90");
  ASSERT_EQ(d.kernels.size(), 2u);
  EXPECT_EQ(d.kernels[0].name, "mxfp4_decode");
  EXPECT_EQ(d.kernels[0].dynamic_smem_bytes, 4 * 2 * 2 * 272);  // WARPS_K x STAGES x UNROLL atoms
  EXPECT_EQ(d.kernels[1].name, "mxfp4_splitk_finish");
  const Config tile{{"BLOCK_M", 8}, {"BLOCK_N", 64}, {"BLOCK_K", 256}, {"WARPS", 4},
                    {"WARPS_K", 1}, {"STAGES", 3},   {"SPLIT_K", 1}};
  const auto t = mxfp4_jit_build(tile, false, true, "sm_90");
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].name, "mxfp4_gemm");
  EXPECT_GT(t.kernels[0].dynamic_smem_bytes, 0);
  EXPECT_EQ(t.kernels[1].name, "mxfp4_splitk_finish");
}
