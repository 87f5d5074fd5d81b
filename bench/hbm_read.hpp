#pragma once
// hbm_read: the read floor of a shape. Reads as many bytes as another op must move for the
// shape, with nothing else to do, so that op's time can be set against what the card takes to
// stream those bytes from cold HBM at that size (small transfers never reach the large-copy
// bandwidth: DRAM latency and the ramp of a kernel's first loads dominate them).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tunebench/nvrtc.hpp"
#include "tunebench/op.hpp"

namespace tunebench::bench {

/// One kernel: THREADS x (BLOCKS_PER_SM x SM count) threads stride over ceil(bytes / 16)
/// 16-byte words (ld.global.nc.v4), UNROLL loads in flight per thread, and XOR every word into
/// one 16-byte result per block (warp shuffles, then shared memory; each block stores its own
/// slot, no atomics), so no load can be dropped and check() can show that no word was skipped
/// or read twice (an XOR sees whether each word was read an odd number of times). Registers
/// are bounded (launch bounds THREADS, BLOCKS_PER_SM) so that every block of a launch is
/// resident at once. The words cycle
/// through copies filling at least twice the L2 (Workload::variants()), so every run reads
/// cold HBM, as the MXFP4 ops' weights do.
/// Config space (both kinds): THREADS in {256, 512, 1024} x BLOCKS_PER_SM in {1, 2, 4, 8} x
/// UNROLL in {1, 2, 4, 8}, where THREADS x BLOCKS_PER_SM <= 2048 (sm_90's threads per SM).
/// flops() is 0; bytes() is the measured op's bytes(shape) (so GB/s and %copy compare directly).
class HbmReadOp final : public Op {
 public:
  /// `of`: the op whose bytes(shape) are read. Throws std::invalid_argument if it is null.
  explicit HbmReadOp(std::shared_ptr<const Op> of);
  ~HbmReadOp() override;

  std::string name() const override { return "hbm_read"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return true; }
  /// The measured op's rules: it reads that op's bytes(shape), which may need what its shape
  /// rules ask (the MoE geometry of a routed op).
  ShapeRules shape_rules() const override { return of_->shape_rules(); }
  std::string kernel_version() const override;
  std::vector<Config> config_space(SpaceKind kind) const override;
  /// False when THREADS exceeds the device's threads per block or is not a multiple of 32,
  /// THREADS x BLOCKS_PER_SM exceeds 2048, BLOCKS_PER_SM exceeds 32 or UNROLL is outside 1..32.
  bool can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const override;
  /// Allocates the copies (filled from `seed`; at least one, together >= 2x L2 on the current
  /// device) and the per-block results. Throws CudaError.
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;
  /// Reads the next copy on `stream`. Throws CompileError if the kernel does not compile,
  /// CudaError if it does not launch.
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;
  /// Zeroes the per-block results, runs once and compares their XOR with the XOR of the copy
  /// computed on the host: rel_error 0 when equal, 1 otherwise; checked = the words read.
  CheckResult check(Workload& work, const Config& config, cudaStream_t stream) const override;
  double flops(const Shape&) const override { return 0; }
  double bytes(const Shape& shape) const override { return of_->bytes(shape); }
  /// The peaks of the op whose bytes it reads.
  RooflinePeaks roofline_peaks(const DeviceInfo& device) const override { return of_->roofline_peaks(device); }

 private:
  std::shared_ptr<const Op> of_;
  JitKernelCache jit_;
};

/// The hbm_read kernel source (NVRTC, one config's -D defines).
const std::string& hbm_read_source();

/// What hbm_read compiles for `config` (THREADS, BLOCKS_PER_SM, UNROLL as -D defines) and
/// `arch` (e.g. "sm_90"). Throws ConfigError for a config lacking one of them.
CompileRequest hbm_read_compile_request(const Config& config, const std::string& arch);

/// Compiles `config` of hbm_read for `arch` (e.g. "sm_90") through `compiler`'s cache.
CompileResult compile_hbm_read_kernel(const KernelCompiler& compiler, const Config& config, const std::string& arch);

}  // namespace tunebench::bench
