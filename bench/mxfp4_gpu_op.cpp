// Mxfp4GpuOp's run-time side: the kernels of a config, compiled once and loaded, and their launches.
#include <cudaTypedefs.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>

#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

namespace {

// The activations (`rows` x `k` BF16, row-major) as the 2-D tensor map a TMA config's kernel
// copies its tiles through: boxes of 64 columns (128 bytes, the 128-byte swizzle's row) by
// BLOCK_M rows, swizzled as the kernel's sw128 layout, rows past `rows` zero-filled. The driver's
// encoder is reached through the runtime (no link to the driver library). The last map of the
// thread is kept: the sweep and the timing loop launch one config on one buffer many times.
const CUtensorMap& activation_map(const void* a, int rows, int k, std::int64_t block_m) {
  static const auto encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TUNEBENCH_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      throw std::runtime_error(
          "mxfp4 TMA configs: the CUDA driver offers no cuTensorMapEncodeTiled (CUDA 12 or later needed)");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  struct Last {
    const void* a = nullptr;
    int rows = 0, k = 0;
    std::int64_t block_m = 0;
    CUtensorMap map{};
  };
  thread_local Last last;
  if (last.a == a && last.rows == rows && last.k == k && last.block_m == block_m) return last.map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(block_m)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode(&last.map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(a), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    last = Last{};
    throw std::runtime_error("mxfp4 TMA config: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(r) +
                             ") for activations of " + std::to_string(rows) + " x " + std::to_string(k) +
                             " BF16 in boxes of 64 x " + std::to_string(block_m));
  }
  last.a = a;
  last.rows = rows;
  last.k = k;
  last.block_m = block_m;
  return last.map;
}

}  // namespace

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
  // One block a 16 x 256 piece of W (mxfp4_dequant.cuh): strips of 16 rows on x, whose limit
  // (2^31 - 1) holds every expert of the grouped op's weights; 256-column pieces on y.
  const dim3 grid(static_cast<unsigned>(rows / 16), static_cast<unsigned>((k + 255) / 256));
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(0)), grid,
                                        dim3(static_cast<unsigned>(kMxfp4DequantThreads)), args, 0, stream));
}

void Mxfp4GpuOp::launch(const Config& config, const void* a, const void* wq, const void* ws, void* y, float* yacc,
                        int rows, int n, int k, int grid_rows, const void* tiles, const int* a_rows,
                        const int* out_rows, cudaStream_t stream) const {
  const JitKernels& kern = kernels(config);
  // A TMA config's kernel takes the activations' tensor map as a twelfth parameter.
  void* args[] = {&a, &wq, &ws, &y, &yacc, &rows, &n, &k, &tiles, &a_rows, &out_rows, nullptr};
  if (uses_tma(config)) {
    args[11] = const_cast<CUtensorMap*>(&activation_map(a, rows, k, config.get("BLOCK_M")));
  }
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
        static_cast<unsigned>(std::min<long long>((count / 4 + finish_threads - 1) / finish_threads, 132 * 16));
    TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kern.kernel(1)), dim3(blocks),
                                          dim3(finish_threads), fargs, 0, stream));
  }
}

}  // namespace tunebench::bench
