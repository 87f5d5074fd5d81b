// Mxfp4GpuOp's run-time side: the kernels of a config, compiled once and loaded, and their launches.
#include <algorithm>
#include <iostream>

#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

Mxfp4GpuOp::Mxfp4GpuOp(bool foldscale, std::uint8_t scale_lo, std::uint8_t scale_hi)
    : foldscale_(foldscale),
      scale_lo_(scale_lo),
      scale_hi_(scale_hi),
      // routed() is virtual: the builder runs only after construction, when it is the final op's.
      jit_("", [this](const Config& config, const std::string& arch) {
        return mxfp4_jit_build(config, routed(), foldscale_, arch);
      }) {}

Mxfp4GpuOp::~Mxfp4GpuOp() = default;

void Mxfp4GpuOp::precompile(const std::vector<Config>& configs, const DeviceInfo& device, int threads) const {
  std::vector<Config> keys;
  keys.reserve(configs.size());
  for (const auto& c : configs) keys.push_back(jit_config(c));
  jit_.precompile(keys, device.arch(), threads);
}

const JitKernels& Mxfp4GpuOp::kernels(const Config& config) const {
  const Config& key = jit_config(config);
  try {
    return jit_.get(key);
  } catch (const CompileError& e) {
    std::cerr << name() << " [" << key.str() << "]: compile failed:\n" << e.log() << "\n";
    throw;
  }
}

void Mxfp4GpuOp::dequantize(const void* wq, const void* ws, void* wb, std::int64_t rows, std::int64_t k,
                            cudaStream_t stream) const {
  static const Config dequant{{"DEQUANT_BF16", 1}};
  const JitKernels& kern = kernels(dequant);
  int n = static_cast<int>(rows), kk = static_cast<int>(k);
  void* args[] = {&wq, &ws, &wb, &n, &kk};
  const long long chunks = static_cast<long long>(rows) * (k / 8);
  const int threads = kMxfp4GridStrideThreads;
  const unsigned blocks = static_cast<unsigned>(std::min<long long>((chunks + threads - 1) / threads, 132 * 32));
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(0)), dim3(blocks),
                                        dim3(static_cast<unsigned>(threads)), args, 0, stream));
}

void Mxfp4GpuOp::launch(const Config& config, const void* a, const void* wq, const void* ws, void* y, float* yacc,
                        int rows, int n, int k, int grid_rows, const void* tiles, const int* a_rows,
                        const int* out_rows, cudaStream_t stream) const {
  const JitKernels& kern = kernels(config);
  void* args[] = {&a, &wq, &ws, &y, &yacc, &rows, &n, &k, &tiles, &a_rows, &out_rows};
  const bool decode = is_decode_config(config);
  const std::int64_t split_k = config.get("SPLIT_K");
  const auto block_n = decode ? decode_block_n(config) : config.get("BLOCK_N");
  const int threads = mxfp4_block_threads(config);
  const dim3 grid(static_cast<unsigned>(n / block_n), static_cast<unsigned>(grid_rows), static_cast<unsigned>(split_k));
  const bool cluster_reduce =
      is_wgmma_ws_config(config) && mxfp4_family(Mxfp4Family::kWgmmaWs).value(config, "CLUSTER_REDUCE") == 1;
  if (cluster_reduce) {
    // The SPLIT_K blocks of an output tile as one cluster: they sum their partial tiles through
    // distributed shared memory and write Y themselves.
    cudaLaunchConfig_t launch{};
    launch.gridDim = grid;
    launch.blockDim = dim3(static_cast<unsigned>(threads));
    launch.dynamicSmemBytes = static_cast<std::size_t>(kern.dynamic_smem_bytes(0));
    launch.stream = stream;
    cudaLaunchAttribute cluster{};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 1;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = static_cast<unsigned>(split_k);
    launch.attrs = &cluster;
    launch.numAttrs = 1;
    TUNEBENCH_CUDA_CHECK(cudaLaunchKernelExC(&launch, reinterpret_cast<const void*>(kern.kernel(0)), args));
    return;
  }
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(0)), grid,
                                        dim3(static_cast<unsigned>(threads)), args,
                                        static_cast<std::size_t>(kern.dynamic_smem_bytes(0)), stream));
  if (split_k > 1) {
    long long count = static_cast<long long>(rows) * n;
    void* fargs[] = {&yacc, &y, &count};
    constexpr int finish_threads = kMxfp4GridStrideThreads;
    const unsigned blocks =
        static_cast<unsigned>(std::min<long long>((count + finish_threads - 1) / finish_threads, 132 * 16));
    TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(1)), dim3(blocks),
                                          dim3(finish_threads), fargs, 0, stream));
  }
}

}  // namespace tunebench::bench
