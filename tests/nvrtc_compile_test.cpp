#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "device_inputs.hpp"
#include "hbm_read.hpp"
#include "mxfp4_gpu.hpp"

namespace fs = std::filesystem;
using tunebench::KernelCompiler;

namespace {

fs::path scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("tunebench_nvrtc_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// Compiles `configs` x {dense, MoE} x {FOLDSCALE 0, 1} (or the grouped op without FOLDSCALE
// alone) for sm_90 on every core; returns the failures as "variant config: first log line".
std::vector<std::string> compile_all(const KernelCompiler& compiler, const std::vector<tunebench::Config>& configs,
                                     bool every_variant = true) {
  struct Job {
    const tunebench::Config* config;
    bool moe, fold;
  };
  std::vector<Job> jobs;
  for (const auto& c : configs) {
    for (bool moe : {false, true}) {
      for (bool fold : {false, true}) {
        // A TMA config is the dense op's alone: it has no grouped variant to compile.
        if (moe && tunebench::bench::uses_tma(c)) continue;
        if (every_variant || (moe && !fold)) jobs.push_back({&c, moe, fold});
      }
    }
  }
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
    threads.emplace_back([&] {
      for (std::size_t i; (i = next++) < jobs.size();) {
        const auto& j = jobs[i];
        const auto r = tunebench::bench::compile_mxfp4_kernel(compiler, *j.config, j.moe, j.fold, "sm_90");
        if (!r.ok || r.cubin.empty()) {
          std::lock_guard<std::mutex> lock(mutex);
          failures.push_back(std::string(j.moe ? "moe" : "dense") + (j.fold ? " fold " : " ") + j.config->str() + ": " +
                             r.log.substr(0, r.log.find('\n')));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

}  // namespace

TEST(NvrtcCompile, EveryDefaultConfigCompilesForSm90AndIsCached) {
  const auto dir = scratch("default");
  const KernelCompiler compiler(dir);
  const tunebench::bench::Mxfp4GemmOp op(false);
  const auto configs = op.config_space(tunebench::SpaceKind::kDefault);
  ASSERT_GE(configs.size(), 20u);
  const auto failures = compile_all(compiler, configs);
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
  std::size_t files = 0, tiles = 0, variants = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".cubin";
  for (const auto& c : configs) {
    if (tunebench::bench::is_dequant_config(c)) continue;
    ++tiles;
    variants += tunebench::bench::uses_tma(c) ? 2 : 4;
  }
  ASSERT_LT(tiles, configs.size()) << "the dense op's dequantize-then-cuBLASLt family is missing";
  // Distinct keys for dense/MoE (dense only for a TMA config) and both FOLDSCALE variants of
  // every tile and decode config, and one dequantization kernel per FOLDSCALE variant shared by
  // every ALGO.
  EXPECT_EQ(files, variants + 2);

  const auto again = tunebench::bench::compile_mxfp4_kernel(compiler, configs[0], false, false, "sm_90");
  EXPECT_TRUE(again.ok);
  EXPECT_TRUE(again.from_cache);
  const auto fold = tunebench::bench::compile_mxfp4_kernel(compiler, configs[0], false, true, "sm_90");
  EXPECT_NE(fold.key, again.key);
  fs::remove_all(dir);
}

TEST(NvrtcCompile, EveryHbmReadConfigCompilesForSm90) {
  const auto dir = scratch("hbm_read");
  const KernelCompiler compiler(dir);
  const tunebench::bench::HbmReadOp read(std::make_shared<const tunebench::bench::Mxfp4GemmOp>(false));
  std::set<std::string> keys;
  for (const auto& c : read.config_space(tunebench::SpaceKind::kDefault)) {
    const auto r = tunebench::bench::compile_hbm_read_kernel(compiler, c, "sm_90");
    EXPECT_TRUE(r.ok && !r.cubin.empty()) << c.str() << ": " << r.log;
    keys.insert(r.key);
  }
  // One kernel per config (BLOCKS_PER_SM bounds its registers).
  EXPECT_EQ(keys.size(), read.config_space(tunebench::SpaceKind::kDefault).size());
  fs::remove_all(dir);
}

TEST(NvrtcCompile, TheDeviceInputGeneratorCompilesForSm90) {
  const auto dir = scratch("random_fill");
  const KernelCompiler compiler(dir);
  const auto r = tunebench::bench::compile_random_fill(compiler, "sm_90");
  EXPECT_TRUE(r.ok && !r.cubin.empty()) << r.log;
  fs::remove_all(dir);
}

TEST(NvrtcCompile, FailureIsReportedWithTheLogAndNotCached) {
  const auto dir = scratch("bad");
  const KernelCompiler compiler(dir);
  const auto r = compiler.compile({"extern \"C\" __global__ void k() { undeclared(); }", "bad.cu", {}, "sm_90"});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undeclared"), std::string::npos) << r.log;
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// Each kernel checks the host's dynamic shared memory for its launch against its own layout when
// it is compiled: the host's figure passes, and the same figure 16 bytes off fails the
// compilation with the kernel's message, for the decode ring, the tile and both wgmma kernels.
TEST(NvrtcCompile, AHostSharedMemoryFigureOffTheKernelsLayoutFailsTheCompilation) {
  using tunebench::Config;
  const KernelCompiler compiler(fs::path{});
  const Config decode{{"DECODE", 1},  {"BLOCK_M", 8}, {"WARPS_K", 4},   {"UNROLL", 2},
                      {"SPLIT_K", 1}, {"STAGES", 2},  {"SCALE_VOTE", 1}};
  const Config tile{{"BLOCK_M", 8}, {"BLOCK_N", 64}, {"BLOCK_K", 256}, {"WARPS", 4},
                    {"WARPS_K", 2}, {"STAGES", 3},   {"SPLIT_K", 1}};
  const Config wgmma{{"WGMMA", 1}, {"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64},
                     {"WARPS", 8}, {"STAGES", 3},    {"SPLIT_K", 1}};
  const Config wgmma_ws{{"WGMMA_WS", 1},  {"BLOCK_M", 64}, {"BLOCK_N", 128}, {"BLOCK_K", 128},
                        {"CONSUMERS", 2}, {"STAGES", 3},   {"SPLIT_K", 2},   {"MMA_N", 64}};
  for (const auto& config : {decode, tile, wgmma, wgmma_ws}) {
    auto build = tunebench::bench::mxfp4_jit_build(config, true, false, "sm_90");
    const std::string flag = "-DLAUNCH_SMEM_BYTES=";
    auto& options = build.request.options;
    const auto it =
        std::find_if(options.begin(), options.end(), [&](const std::string& o) { return o.rfind(flag, 0) == 0; });
    ASSERT_NE(it, options.end()) << config.str();
    const int smem = build.kernels[0].dynamic_smem_bytes;
    EXPECT_EQ(*it, flag + std::to_string(smem)) << config.str();
    const auto right = compiler.compile(build.request);
    EXPECT_TRUE(right.ok) << config.str() << ": " << right.log;
    *it = flag + std::to_string(smem + 16);
    const auto off = compiler.compile(build.request);
    EXPECT_FALSE(off.ok) << config.str();
    EXPECT_NE(off.log.find("the host's dynamic shared memory for " + build.kernels[0].name), std::string::npos)
        << config.str() << ": " << off.log;
  }
}

// ptxas -v through NVRTC: each entry function's registers, spills, stack and shared memory,
// read from the log of a real compile and from a log with spills.
TEST(NvrtcCompile, PtxasInfoGivesEachKernelsRegistersAndSpills) {
  const KernelCompiler compiler(fs::path{});
  const auto r =
      compiler.compile({"extern \"C\" __global__ void small(int* p) { *p = 1; }\n"
                        "extern \"C\" __global__ void shared(int* p) { __shared__ int s[64]; s[threadIdx.x] = *p;"
                        " __syncthreads(); p[threadIdx.x] = s[63 - threadIdx.x]; }",
                        "k.cu",
                        {"-Xptxas=-v"},
                        "sm_90"});
  ASSERT_TRUE(r.ok) << r.log;
  const auto kernels = tunebench::parse_ptxas_info(r.log);
  ASSERT_EQ(kernels.size(), 2u) << r.log;
  std::set<std::string> names{kernels[0].kernel, kernels[1].kernel};
  EXPECT_EQ(names, (std::set<std::string>{"small", "shared"}));
  for (const auto& k : kernels) {
    EXPECT_GT(k.registers, 0) << k.kernel;
    EXPECT_EQ(k.spill_store_bytes, 0) << k.kernel;
    EXPECT_EQ(k.static_smem_bytes, k.kernel == "shared" ? 256 : 0) << r.log;
  }
  EXPECT_TRUE(
      tunebench::parse_ptxas_info(compiler.compile({"extern \"C\" __global__ void k() {}", "k.cu", {}, "sm_90"}).log)
          .empty());

  const std::string spilled =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'mxfp4_gemm' for 'sm_90'\n"
      "ptxas info    : Function properties for mxfp4_gemm\n"
      "    160 bytes stack frame, 154 bytes spill stores, 152 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 160 bytes cumulative stack size\n"
      "ptxas info    : Compiling entry function 'mxfp4_splitk_finish' for 'sm_90'\n"
      "ptxas info    : Used 13 registers, used 0 barriers, 7680 bytes smem\n";
  const auto k = tunebench::parse_ptxas_info(spilled);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].kernel, "mxfp4_gemm");
  EXPECT_EQ(k[0].registers, 255);
  EXPECT_EQ(k[0].spill_store_bytes, 154);
  EXPECT_EQ(k[0].spill_load_bytes, 152);
  EXPECT_EQ(k[0].stack_frame_bytes, 160);
  EXPECT_EQ(k[0].static_smem_bytes, 0);
  EXPECT_EQ(k[1].registers, 13);
  EXPECT_EQ(k[1].static_smem_bytes, 7680);
}

// The register rule of the Occupancy Calculator for compute capability 9.0, checked against
// what ncu reported on an H200 for the decode kernel (63 registers, 512 threads: 2 blocks).
TEST(NvrtcCompile, BlocksAnSmHoldsByRegisters) {
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(63, 512), 2);
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(64, 512), 2);
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(65, 512), 1);  // 72 a thread once rounded up
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(88, 512), 1);
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(255, 256), 1);
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(255, 1024), 0);  // does not fit at all
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(16, 32), 32);    // the 32-block cap
  EXPECT_EQ(tunebench::blocks_per_sm_by_registers(32, 1024), 2);   // the 64-warp cap
  EXPECT_THROW(tunebench::blocks_per_sm_by_registers(0, 256), std::invalid_argument);
  EXPECT_THROW(tunebench::blocks_per_sm_by_registers(64, 2048), std::invalid_argument);
}

TEST(NvrtcCompile, ATornOrForeignCacheFileIsRecompiledNotLoaded) {
  const auto dir = scratch("torn");
  const KernelCompiler compiler(dir);
  const tunebench::CompileRequest req{"extern \"C\" __global__ void k(int* p) { *p = 1; }", "k.cu", {}, "sm_90"};
  const auto first = compiler.compile(req);
  ASSERT_TRUE(first.ok);
  const auto file = dir / (first.key + ".cubin");
  fs::resize_file(file, 40);  // torn: shorter than its key header
  const auto second = compiler.compile(req);
  EXPECT_TRUE(second.ok);
  EXPECT_FALSE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_TRUE(compiler.compile(req).from_cache);
  fs::remove_all(dir);
}

// The grouped op's wgmma configs of the default space (sm_90a code) in all four variants, and
// every wgmma config of the expanded space (both ops' 57) in the grouped FOLDSCALE=0 variant:
// few enough for every CI run.
TEST(NvrtcCompile, TheWgmmaConfigsCompileForSm90a) {
  using tunebench::bench::is_wgmma_config;
  const KernelCompiler compiler(fs::path{});
  const tunebench::bench::Mxfp4MoeOp op(false);
  std::vector<tunebench::Config> defaults, expanded;
  for (const auto& c : op.config_space(tunebench::SpaceKind::kDefault)) {
    if (is_wgmma_config(c)) defaults.push_back(c);
  }
  for (const auto& c : op.config_space(tunebench::SpaceKind::kExpanded)) {
    if (is_wgmma_config(c)) expanded.push_back(c);
  }
  ASSERT_GE(defaults.size(), 2u);
  ASSERT_GE(expanded.size(), 50u);
  auto failures = compile_all(compiler, defaults);
  const auto more = compile_all(compiler, expanded, false);
  failures.insert(failures.end(), more.begin(), more.end());
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
}

// Every config of the warp-specialized wgmma family (sm_90a code; the expanded space's, which
// holds the default space's) in all four variants: dense and grouped, FOLDSCALE 0 and 1.
TEST(NvrtcCompile, TheWarpSpecializedWgmmaConfigsCompileForSm90a) {
  using tunebench::bench::is_wgmma_ws_config;
  const KernelCompiler compiler(fs::path{});
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  std::vector<tunebench::Config> configs;
  for (const auto& c : dense.config_space(tunebench::SpaceKind::kExpanded)) {
    if (is_wgmma_ws_config(c)) configs.push_back(c);
  }
  for (const auto* op : {static_cast<const tunebench::bench::Mxfp4GpuOp*>(&dense),
                         static_cast<const tunebench::bench::Mxfp4GpuOp*>(&moe)}) {
    for (const auto kind : {tunebench::SpaceKind::kDefault, tunebench::SpaceKind::kExpanded}) {
      for (const auto& c : op->config_space(kind)) {
        if (is_wgmma_ws_config(c)) {
          EXPECT_NE(std::find(configs.begin(), configs.end(), c), configs.end()) << op->name() << " " << c.str();
        }
      }
    }
  }
  ASSERT_GE(configs.size(), 30u);
  const auto failures = compile_all(compiler, configs);
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
}

// ptxas may wait for each wgmma before issuing the next (its -v log then says "wgmma.mma_async
// instructions are serialized", C7514/C7515): a 256 x 128 tile with one m64n256k16 a k16 step ran
// 1.19-1.26x slower for it than with two m64n128k16 (H200, 2026-12-03). No default config of the
// two wgmma families may compile that way.
TEST(NvrtcCompile, NoDefaultWgmmaConfigHasItsMmasSerialized) {
  const KernelCompiler compiler(fs::path{});  // ptxas's -v log comes only from a compile
  const tunebench::bench::Mxfp4GemmOp dense(false);
  const tunebench::bench::Mxfp4MoeOp moe(false);
  int checked = 0;
  for (const auto* op : {static_cast<const tunebench::bench::Mxfp4GpuOp*>(&dense),
                         static_cast<const tunebench::bench::Mxfp4GpuOp*>(&moe)}) {
    for (const auto& c : op->config_space(tunebench::SpaceKind::kDefault)) {
      if (!tunebench::bench::is_wgmma_config(c) && !tunebench::bench::is_wgmma_ws_config(c)) continue;
      auto build = tunebench::bench::mxfp4_jit_build(c, op == &moe, false, "sm_90");
      build.request.options.push_back("-Xptxas=-v");
      const auto r = compiler.compile(build.request);
      ASSERT_TRUE(r.ok) << op->name() << " " << c.str() << ": " << r.log;
      EXPECT_EQ(r.log.find("are serialized"), std::string::npos) << op->name() << " " << c.str() << ":\n" << r.log;
      ++checked;
    }
  }
  EXPECT_GE(checked, 16);
}

// Opt-in (CTest label "expanded"): every config of the expanded space that some shipped shape
// can use on an sm_90 device, in all four variants (about 2400 compilations).
TEST(NvrtcCompileExpanded, EveryExpandedConfigCompilesForSm90) {
  if (!std::getenv("TUNEBENCH_EXPANDED")) GTEST_SKIP() << "set TUNEBENCH_EXPANDED=1 (ctest -L expanded)";
  const KernelCompiler compiler(fs::path{});
  const tunebench::bench::Mxfp4GemmOp op(false);
  const auto dev = tunebench::sm90_reference_device();
  std::vector<tunebench::Config> usable;
  for (const auto& c : op.config_space(tunebench::SpaceKind::kExpanded)) {
    for (auto nk : {std::pair{4096, 4096}, {4096, 2048}, {1024, 4096}, {4096, 512}}) {
      if (op.can_implement(c, {"s", "w", 1, nk.first, nk.second, 256, 6, std::nullopt}, dev)) {
        usable.push_back(c);
        break;
      }
    }
  }
  std::cout << usable.size() << " usable expanded configs\n";
  ASSERT_GE(usable.size(), 100u);
  const auto failures = compile_all(compiler, usable);
  EXPECT_TRUE(failures.empty()) << failures.size() << " failed, first: " << failures.front();
}
