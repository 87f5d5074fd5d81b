#include "hbm_read.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace tunebench::bench {
namespace {

// sm_90 runs at most 2048 threads per SM; more per SM only queues blocks behind the first wave.
constexpr std::int64_t kThreadsPerSm = 2048;
constexpr std::int64_t kMaxBlocksPerSm = 32;  // sm_90's resident blocks per SM

struct ReadWorkload final : Workload {
  std::size_t words = 0;  // 16-byte words read per run
  DeviceBuffer copies;    // `count` copies, one every `stride` bytes
  std::size_t count = 0, stride = 0;
  std::array<std::uint32_t, 4> expected{};  // XOR of every word of a copy
  DeviceBuffer result;                      // one 16-byte XOR per block
  std::size_t calls = 0;
  int sm_count = 0;
  std::size_t variants() const override { return count; }
};

}  // namespace

const std::string& hbm_read_source() {
  static const std::string source = R"(
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM) hbm_read(const uint4* __restrict__ p, unsigned long long words,
                                                             uint4* __restrict__ out) {
  const unsigned long long stride = (unsigned long long)gridDim.x * THREADS;
  unsigned long long i = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i + (UNROLL - 1) * stride < words; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w;
    }
  }
  for (; i < words; i += stride) {
    const uint4 v = __ldg(p + i);
    acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
  }
  // One 16-byte store per block, each to its own slot: same-address atomics from every warp
  // serialize in L2 and would cost microseconds of their own.
  for (int o = 16; o > 0; o >>= 1) {
    acc.x ^= __shfl_xor_sync(0xffffffffu, acc.x, o);
    acc.y ^= __shfl_xor_sync(0xffffffffu, acc.y, o);
    acc.z ^= __shfl_xor_sync(0xffffffffu, acc.z, o);
    acc.w ^= __shfl_xor_sync(0xffffffffu, acc.w, o);
  }
  __shared__ uint4 warps[THREADS / 32];
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < THREADS / 32; ++i) {
      acc.x ^= warps[i].x; acc.y ^= warps[i].y; acc.z ^= warps[i].z; acc.w ^= warps[i].w;
    }
    out[blockIdx.x] = acc;
  }
}
)";
  return source;
}

CompileRequest hbm_read_compile_request(const Config& config, const std::string& arch) {
  CompileRequest req;
  req.source = hbm_read_source();
  req.source_name = "hbm_read.cu";
  req.arch = arch;
  // BLOCKS_PER_SM bounds the registers, so that the blocks of a launch are all resident at once.
  req.options = {"-std=c++17", "-DTHREADS=" + std::to_string(config.get("THREADS")),
                 "-DBLOCKS_PER_SM=" + std::to_string(config.get("BLOCKS_PER_SM")),
                 "-DUNROLL=" + std::to_string(config.get("UNROLL"))};
  return req;
}

CompileResult compile_hbm_read_kernel(const KernelCompiler& compiler, const Config& config, const std::string& arch) {
  return compiler.compile(hbm_read_compile_request(config, arch));
}

HbmReadOp::HbmReadOp(std::shared_ptr<const Op> of)
    : of_(std::move(of)), jit_("hbm_read", [](const Config& config, const std::string& arch) {
        return JitBuild{hbm_read_compile_request(config, arch), {JitKernel{"hbm_read"}}};
      }) {
  if (!of_) throw std::invalid_argument("hbm_read: expected the op whose bytes it reads, got none");
}

HbmReadOp::~HbmReadOp() = default;

std::string HbmReadOp::kernel_version() const { return "hbm_read-" + content_hash(hbm_read_source()); }

std::vector<Config> HbmReadOp::config_space(SpaceKind) const {
  std::vector<Config> out;
  for (const auto& c :
       cartesian_product({{"THREADS", {256, 512, 1024}}, {"BLOCKS_PER_SM", {1, 2, 4, 8}}, {"UNROLL", {1, 2, 4, 8}}})) {
    if (c.get("THREADS") * c.get("BLOCKS_PER_SM") <= kThreadsPerSm) out.push_back(c);
  }
  return out;
}

bool HbmReadOp::can_implement(const Config& config, const Shape&, const DeviceInfo& device) const {
  const auto threads = config.get("THREADS");
  return threads > 0 && threads % 32 == 0 && threads <= device.max_threads_per_block &&
         config.get("BLOCKS_PER_SM") > 0 && config.get("BLOCKS_PER_SM") <= kMaxBlocksPerSm &&
         threads * config.get("BLOCKS_PER_SM") <= kThreadsPerSm && config.get("UNROLL") > 0 &&
         config.get("UNROLL") <= 32;
}

std::unique_ptr<Workload> HbmReadOp::prepare(const Shape& shape, std::uint64_t seed) const {
  auto w = std::make_unique<ReadWorkload>();
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const DeviceInfo info = query_device(device);
  w->sm_count = info.sm_count;
  w->words = std::max<std::size_t>(1, (static_cast<std::size_t>(bytes(shape)) + 15) / 16);
  std::vector<std::uint32_t> host(w->words * 4);
  std::mt19937_64 rng(seed);
  for (auto& x : host) x = static_cast<std::uint32_t>(rng());
  for (std::size_t i = 0; i < host.size(); ++i) w->expected[i % 4] ^= host[i];
  // One allocation (a tiny shape would otherwise need hundreds of thousands), each copy on its
  // own 256-byte boundary.
  w->stride = (w->words * 16 + 255) / 256 * 256;
  w->count = std::max<std::size_t>(1, (2 * info.l2_bytes + w->stride - 1) / w->stride);
  std::vector<std::uint8_t> all(w->count * w->stride);
  for (std::size_t i = 0; i < w->count; ++i) std::memcpy(all.data() + i * w->stride, host.data(), w->words * 16);
  w->copies = DeviceBuffer(all.size());
  w->copies.upload(all.data(), all.size());
  w->result = DeviceBuffer(16 * static_cast<std::size_t>(kMaxBlocksPerSm * w->sm_count));
  return w;
}

void HbmReadOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<ReadWorkload&>(work);
  const cudaKernel_t kernel = jit_.get(config).kernel(0);
  const void* p = w.copies.as<const std::uint8_t>() + (w.calls++ % w.count) * w.stride;
  unsigned long long words = w.words;
  void* out = w.result.get();
  void* args[] = {&p, &words, &out};
  const auto blocks = static_cast<unsigned>(config.get("BLOCKS_PER_SM") * w.sm_count);
  TUNEBENCH_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks),
                                        dim3(static_cast<unsigned>(config.get("THREADS"))), args, 0, stream));
}

CheckResult HbmReadOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<ReadWorkload&>(work);
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.result.get(), 0, w.result.bytes(), stream));
  run(work, config, stream);
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::uint32_t> blocks(w.result.bytes() / 4);
  w.result.download(blocks.data(), w.result.bytes());
  std::array<std::uint32_t, 4> got{};
  for (std::size_t i = 0; i < blocks.size(); ++i) got[i % 4] ^= blocks[i];
  CheckResult r;
  r.rel_error = got == w.expected ? 0.0 : 1.0;
  r.checked = w.words;
  return r;
}

}  // namespace tunebench::bench
