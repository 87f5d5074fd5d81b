// Ops of another project, registered on tunebench's shape sets: a host-timed sum over K, and a
// CUDA kernel compiled at run time by tunebench's JIT kernel cache in two configs.
#include <tunebench/main.hpp>
#include <tunebench/nvrtc.hpp>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace {

struct Work final : tunebench::Workload {
  std::vector<float> x;
  float sum = 0;
};

class SumOp final : public tunebench::Op {
 public:
  std::string name() const override { return "cpu_my_sum"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return false; }
  std::string kernel_version() const override { return "sum-1"; }
  std::vector<tunebench::Config> config_space(tunebench::SpaceKind) const override {
    return tunebench::cartesian_product({{"UNROLL", {1}}});
  }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape& s, std::uint64_t) const override {
    auto w = std::make_unique<Work>();
    w->x.assign(static_cast<std::size_t>(s.m * s.k), 1.0f);
    return w;
  }
  void run(tunebench::Workload& w, const tunebench::Config&, cudaStream_t) const override {
    auto& work = static_cast<Work&>(w);
    work.sum = std::accumulate(work.x.begin(), work.x.end(), 0.0f);
    benchmark::DoNotOptimize(work.sum);
  }
  double flops(const tunebench::Shape& s) const override { return static_cast<double>(s.m * s.k); }
  double bytes(const tunebench::Shape& s) const override { return 4.0 * static_cast<double>(s.m * s.k); }
};

const char* const kScaleSource = R"(
extern "C" __global__ void __launch_bounds__(BLOCK) my_scale(const float* x, float* y, long long n) {
  const long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";

struct GpuWork final : tunebench::Workload {
  long long n = 0;
  tunebench::DeviceBuffer x, y;
};

// Y[M, K] = 2 X[M, K] on the GPU; BLOCK threads per block, the config compiled in.
class ScaleOp final : public tunebench::Op {
 public:
  ScaleOp()
      : jit_("gpu_my_scale", [](const tunebench::Config& config, const std::string& arch) {
          tunebench::CompileRequest request{
              kScaleSource, "my_scale.cu", {"-DBLOCK=" + std::to_string(config.get("BLOCK"))}, arch};
          return tunebench::JitBuild{request, {tunebench::JitKernel{"my_scale"}}};
        }) {}
  std::string name() const override { return "gpu_my_scale"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return true; }
  std::string kernel_version() const override { return "my_scale-" + tunebench::content_hash(kScaleSource); }
  std::vector<tunebench::Config> config_space(tunebench::SpaceKind) const override {
    return tunebench::cartesian_product({{"BLOCK", {128, 256}}});
  }
  void precompile(const std::vector<tunebench::Config>& configs, const tunebench::DeviceInfo& device,
                  int threads) const override {
    jit_.precompile(configs, device.arch(), threads);
  }
  std::unique_ptr<tunebench::Workload> prepare(const tunebench::Shape& s, std::uint64_t) const override {
    auto w = std::make_unique<GpuWork>();
    w->n = s.m * s.k;
    const std::vector<float> ones(static_cast<std::size_t>(w->n), 1.0f);
    w->x = tunebench::DeviceBuffer(ones.size() * sizeof(float));
    w->x.upload(ones.data(), w->x.bytes());
    w->y = tunebench::DeviceBuffer(ones.size() * sizeof(float));
    return w;
  }
  void run(tunebench::Workload& w, const tunebench::Config& config, cudaStream_t stream) const override {
    auto& work = static_cast<GpuWork&>(w);
    const cudaKernel_t kernel = jit_.get(config).kernel(0);
    const void* x = work.x.get();
    void* y = work.y.get();
    void* args[] = {&x, &y, &work.n};
    const auto block = static_cast<unsigned>(config.get("BLOCK"));
    const auto grid = static_cast<unsigned>((work.n + block - 1) / block);
    TUNEBENCH_CUDA_CHECK(
        cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(grid), dim3(block), args, 0, stream));
  }
  double flops(const tunebench::Shape& s) const override { return static_cast<double>(s.m * s.k); }
  double bytes(const tunebench::Shape& s) const override { return 8.0 * static_cast<double>(s.m * s.k); }

 private:
  tunebench::JitKernelCache jit_;
};

tunebench::OpList my_ops() { return {std::make_shared<SumOp>(), std::make_shared<ScaleOp>()}; }

}  // namespace

// The call form of the example in tunebench/main.hpp.
int main(int argc, char** argv) { return tunebench::run_benchmarks(argc, argv, my_ops(), SHAPES, "^gpu_", "^cpu_"); }
