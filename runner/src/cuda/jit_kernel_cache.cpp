#include "tunebench/nvrtc.hpp"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <utility>

namespace tunebench {
namespace {

std::string compile_error_what(const std::string& label, const std::string& log) {
  return "compile_failed: " + (label.empty() ? std::string() : label + ": ") + log.substr(0, log.find('\n'));
}

}  // namespace

CompileError::CompileError(const std::string& label, std::string log)
    : std::runtime_error(compile_error_what(label, log)), log_(std::make_shared<const std::string>(std::move(log))) {}

JitKernels::JitKernels(const std::string& cubin, const std::vector<JitKernel>& kernels, int device) : library_(cubin) {
  for (const auto& k : kernels) {
    cudaKernel_t handle = library_.kernel(k.name.c_str());
    if (k.dynamic_smem_bytes > 0) {
      TUNEBENCH_CUDA_CHECK(cudaKernelSetAttributeForDevice(handle, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                           k.dynamic_smem_bytes, device));
    }
    kernels_.push_back(handle);
    smem_.push_back(k.dynamic_smem_bytes);
  }
}

JitKernelCache::JitKernelCache(std::string label, JitBuilder build)
    : label_(std::move(label)), build_(std::move(build)) {}

JitKernelCache::JitKernelCache(std::string label, JitBuilder build, std::filesystem::path cache_dir)
    : label_(std::move(label)), build_(std::move(build)), cache_dir_(std::move(cache_dir)) {}

JitKernelCache::~JitKernelCache() = default;

const KernelCompiler& JitKernelCache::compiler() const {
  // The folder is resolved late so that a test or tool may point TUNEBENCH_KERNEL_CACHE
  // elsewhere after the ops were made, as the ops' own caches allowed before.
  std::call_once(compiler_once_, [this] {
    compiler_ = std::make_unique<KernelCompiler>(cache_dir_ ? *cache_dir_ : kernel_cache_dir_or_none());
  });
  return *compiler_;
}

CompileResult JitKernelCache::compile(const Config& config, const std::string& arch) const {
  CompileResult out = compiler().compile(build_(config, arch).request);
  if (!out.ok) throw CompileError(label_, std::move(out.log));
  return out;
}

const JitKernels& JitKernelCache::get(const Config& config) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = loaded_[config.str()];
  if (slot) return *slot;
  try {
    int device = 0;
    TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
    const std::string arch = query_device(device).arch();
    const JitBuild build = build_(config, arch);
    CompileResult compiled = compiler().compile(build.request);
    if (!compiled.ok) throw CompileError(label_, std::move(compiled.log));
    slot = std::make_unique<JitKernels>(compiled.cubin, build.kernels, device);
  } catch (...) {
    loaded_.erase(config.str());  // nothing is remembered of a failure: the next call retries
    throw;
  }
  return *slot;
}

void JitKernelCache::precompile(const std::vector<Config>& configs, const std::string& arch, int threads) const {
  const KernelCompiler& shared = compiler();
  if (shared.cache_dir().empty()) return;  // nowhere to keep the results
  std::vector<Config> todo;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::set<std::string> seen;
    for (const auto& c : configs) {
      const std::string key = c.str();
      if (!loaded_.count(key) && seen.insert(key).second) todo.push_back(c);
    }
  }
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i; (i = next++) < todo.size();) {
      try {
        shared.compile(build_(todo[i], arch).request);
      } catch (const std::exception&) {
        // get() compiles again and reports the failure with its config.
      }
    }
  };
  std::vector<std::thread> pool;
  const auto n = std::min<std::size_t>(todo.size(), static_cast<std::size_t>(std::max(1, threads)));
  for (std::size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace tunebench
