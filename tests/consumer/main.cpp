// An op of another project: a host-timed sum over K, registered on tunebench's shape sets.
#include <tunebench/main.hpp>

#include <memory>
#include <numeric>
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

}  // namespace

int main(int argc, char** argv) {
  return tunebench::run_benchmarks(argc, argv, {std::make_shared<SumOp>()}, SHAPES, "^cpu_", "^cpu_");
}
