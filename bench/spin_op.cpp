#include "spin_op.hpp"

#include <algorithm>
#include <stdexcept>

namespace tunebench::bench {
namespace {

const std::string& spin_source() {
  static const std::string source = R"(
extern "C" __global__ void spin(unsigned long long duration_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < duration_ns);
}
)";
  return source;
}

struct SpinWorkload final : Workload {};

}  // namespace

SpinOp::SpinOp(std::string name, std::int64_t duration_ns)
    : name_(std::move(name)),
      duration_ns_(duration_ns),
      jit_("spin kernel", [](const Config&, const std::string& arch) {
        return JitBuild{{spin_source(), "spin.cu", {}, arch}, {JitKernel{"spin"}}};
      }) {
  if (name_.empty() || name_.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    throw std::invalid_argument("spin op name '" + name_ + "': expected [a-z0-9_]+");
  }
  if (duration_ns_ < 0) throw std::invalid_argument("spin op duration: expected >= 0 ns");
}

SpinOp::~SpinOp() = default;

std::string SpinOp::kernel_version() const { return "spin-" + content_hash(spin_source()); }

std::vector<Config> SpinOp::config_space(SpaceKind) const { return {Config{{"BLOCKS", 1}}}; }

std::unique_ptr<Workload> SpinOp::prepare(const Shape&, std::uint64_t) const {
  return std::make_unique<SpinWorkload>();
}

void SpinOp::run(Workload&, const Config& config, cudaStream_t stream) const {
  const cudaKernel_t kernel = jit_.get(Config{}).kernel(0);
  unsigned long long ns = static_cast<unsigned long long>(duration_ns_);
  void* args[] = {&ns};
  const auto blocks = static_cast<unsigned>(config.get("BLOCKS"));
  const auto& params = config.params();
  const bool counted = std::any_of(params.begin(), params.end(), [](const auto& p) { return p.first == "KERNELS"; });
  const std::int64_t kernels = counted ? config.get("KERNELS") : 1;
  for (std::int64_t i = 0; i < kernels; ++i) {
    TUNEBENCH_CUDA_CHECK(
        cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(1), args, 0, stream));
  }
}

}  // namespace tunebench::bench
