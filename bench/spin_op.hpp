#pragma once
// spin: a calibration op whose one kernel runs for a set time, read from the GPU's own
// nanosecond clock (%globaltimer). The timing tests and the harness benchmark use it to check
// that a timer reports kernel time, neither more (launch overhead) nor less.

#include <cstdint>
#include <memory>
#include <string>

#include "tunebench/nvrtc.hpp"
#include "tunebench/op.hpp"

namespace tunebench::bench {

/// Each of the kernel's BLOCKS blocks (one thread each) reads %globaltimer (PTX ISA, "Special
/// Registers: %globaltimer", ns) and spins until `duration_ns` have passed, so the kernel takes
/// duration_ns plus its start-up on the GPU, whatever the launch costs on the host. Config
/// space: BLOCKS in {1} (one block: the launch-overhead case); a config may also set KERNELS
/// (launches per run, default 1), for tests of runs of several kernels. Shapes are ignored; flops and
/// bytes are 0. Compiled with NVRTC on first use (kernel cache as the MXFP4 ops).
class SpinOp final : public Op {
 public:
  /// `name` as Op::name ([a-z0-9_]+). Throws std::invalid_argument for a bad name.
  SpinOp(std::string name, std::int64_t duration_ns);
  ~SpinOp() override;

  std::string name() const override { return name_; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return true; }
  std::string kernel_version() const override;
  std::vector<Config> config_space(SpaceKind kind) const override;
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;
  /// Launches the spin kernel on `stream`. Throws CompileError if it does not compile,
  /// CudaError if it does not launch.
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;
  double flops(const Shape&) const override { return 0; }
  double bytes(const Shape&) const override { return 0; }

  std::int64_t duration_ns() const { return duration_ns_; }

 private:
  std::string name_;
  std::int64_t duration_ns_;
  JitKernelCache jit_;  // one entry: the kernel does not depend on the config
};

}  // namespace tunebench::bench
