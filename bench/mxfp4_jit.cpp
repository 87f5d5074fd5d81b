// What the MXFP4 ops compile for a config: the kernel file of its family with the family's axes
// as defines, and the kernels they load from the binary.
#include <mutex>

#include "tunebench/op_switch.hpp"

#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

namespace {
const OpSwitch kFoldScale{
    "FLAGGEMS_MXFP4_FOLDSCALE",
    "`1`: the MXFP4 ops fold the exponent-bias correction into each block's scale (one multiply per element pair "
    "instead of two; bit-identical output). A compiled variant, not part of the config, so an A/B can replay "
    "identical configs both ways"};
}  // namespace

bool foldscale_from_env() { return kFoldScale.value(); }

const std::string& mxfp4_kernel_source(Mxfp4Family family) {
  static std::once_flag once;
  static std::map<Mxfp4Family, std::string> sources;
  std::call_once(once, [] {
    for (const auto& f : mxfp4_families()) sources[f.id] = flatten_includes(mxfp4_kernel_files(), f.file);
  });
  return sources.at(family);
}

namespace {

CompileRequest mxfp4_request(const Config& config, bool moe, bool foldscale, const std::string& arch) {
  const KernelFamily& family = family_of(config);
  CompileRequest req;
  req.source = mxfp4_kernel_source(family.id);
  req.source_name = family.file;
  req.arch = arch;
  req.options = {"-std=c++17"};
  if (family.gemm) req.options.push_back("-DMOE=" + std::to_string(moe ? 1 : 0));
  req.options.push_back("-DFOLDSCALE=" + std::to_string(foldscale ? 1 : 0));
  if (!family.gemm) return req;  // one dequantization kernel for every ALGO
  // wgmma exists only in sm_90a, the architecture-specific variant of sm_90.
  if ((family.id == Mxfp4Family::kWgmma || family.id == Mxfp4Family::kWgmmaWs) && arch == "sm_90") {
    req.arch = "sm_90a";
  }
  for (auto& define : family.defines(config)) req.options.push_back(std::move(define));
  // The kernel checks the launch's figure against its own layout (a static_assert), so that a
  // change to one side that the other misses fails the compilation instead of a launch.
  req.options.push_back("-DLAUNCH_SMEM_BYTES=" + std::to_string(launch_smem_bytes(config)));
  return req;
}

}  // namespace

JitBuild mxfp4_jit_build(const Config& config, bool moe, bool foldscale, const std::string& arch) {
  const KernelFamily& family = family_of(config);
  JitBuild build{mxfp4_request(config, moe, foldscale, arch), {}};
  if (!family.gemm) {
    build.kernels = {JitKernel{family.kernel}};
  } else {
    build.kernels = {JitKernel{family.kernel, static_cast<int>(launch_smem_bytes(config))},
                     JitKernel{"mxfp4_splitk_finish"}};
  }
  return build;
}

int mxfp4_block_threads(const Config& config) {
  if (is_decode_config(config)) return static_cast<int>(config.get("WARPS_K")) * 32;
  if (is_dequant_config(config)) return kMxfp4DequantThreads;
  if (is_wgmma_ws_config(config)) {
    return static_cast<int>(config.get("CONSUMERS") * 128 +
                            mxfp4_family(Mxfp4Family::kWgmmaWs).value(config, "PRODUCERS") * 32);
  }
  return static_cast<int>(config.get("WARPS")) * 32;
}

CompileResult compile_mxfp4_kernel(const KernelCompiler& compiler, const Config& config, bool moe, bool foldscale,
                                   const std::string& arch) {
  return compiler.compile(mxfp4_request(config, moe, foldscale, arch));
}

// A reference, not a copy: kernels() runs on every launch.
const Config& jit_config(const Config& config) {
  static const Config dequant{{"DEQUANT_BF16", 1}};
  return is_dequant_config(config) ? dequant : config;
}

std::string mxfp4_kernel_version(const KernelFiles& files) {
  std::string code;
  for (const auto& f : mxfp4_families()) code += without_comments(flatten_includes(files, f.file));
  return "mxfp4-" + content_hash(code);
}

std::string Mxfp4GpuOp::kernel_version() const {
  static const std::string version = mxfp4_kernel_version(mxfp4_kernel_files());
  return version;
}

}  // namespace tunebench::bench
