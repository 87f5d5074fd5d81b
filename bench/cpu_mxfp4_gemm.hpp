#pragma once
// The CPU reference MXFP4-weight GEMM: what GPU kernels are checked against, the op that runs
// on machines without a GPU, and what lets CI drive the whole pipeline.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mxfp4.hpp"
#include "tunebench/op.hpp"

namespace tunebench::bench {

/// Y[M,N] (BF16 bits, row-major) = X[M,K] (BF16 bits, row-major) . dequantize(W)[N,K]^T with W
/// an MXFP4 matrix of N rows and K columns. Accumulates in float over K in blocks of block_k
/// (W dequantized block_n rows x block_k columns at a time), then rounds to BF16 (nearest
/// even). Columns blocks run in parallel (OpenMP). block_n > 0; block_k a positive multiple of
/// 32. Throws std::invalid_argument on a bad size.
void cpu_mxfp4_gemm(const std::uint16_t* x, const mxfp4::Matrix& w, std::uint16_t* y, std::int64_t m,
                    std::int64_t block_n, std::int64_t block_k);

/// cpu_mxfp4_gemm with the fp32 sums written as they are (no BF16 rounding): the reference the
/// GPU kernels are compared with. Same arguments and errors.
void cpu_mxfp4_gemm_f32(const std::uint16_t* x, const mxfp4::Matrix& w, float* y, std::int64_t m, std::int64_t block_n,
                        std::int64_t block_k);

/// Deterministic test data: X is BF16 in [-1, 1); W is drawn per 32-element block with a
/// random magnitude 2^u, u uniform in [-8, 8), so its MXFP4 scales vary, then quantized.
struct GemmInputs {
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<std::uint16_t> x;  ///< [m, k] BF16 bits
  mxfp4::Matrix w;               ///< [n, k] MXFP4
};
GemmInputs make_gemm_inputs(std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t seed);

/// cpu_mxfp4_gemm as a benchmarked op, "cpu_mxfp4_gemm", timed by the host clock in ms.
/// Config: BLOCK_N (rows of W per tile), BLOCK_K (K per tile, a multiple of 32).
/// flops = 2*M*N*K; bytes = 0.53125*N*K + 2*M*K + 2*M*N (MXFP4 weights at 4.25 bits, BF16 X
/// read and Y written; docs/reference: roofline of an MXFP4-weight GEMM).
class CpuMxfp4GemmOp final : public Op {
 public:
  std::string name() const override { return "cpu_mxfp4_gemm"; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMillisecond; }
  bool needs_gpu() const override { return false; }
  /// mxfp4::shape_rules(): K a multiple of 32, the MXFP4 block.
  ShapeRules shape_rules() const override { return mxfp4::shape_rules(); }
  std::string kernel_version() const override { return "cpu_mxfp4_gemm-1"; }
  std::vector<Config> config_space(SpaceKind kind) const override;
  /// Above this many flops (about a second per run on two cores) only BLOCK_N=64,BLOCK_K=512
  /// is offered, so the CPU reference's prefill shapes are not swept.
  static constexpr double kMaxTunedFlops = 2e10;
  /// Tiles no larger than the problem (BLOCK_N <= N, BLOCK_K <= K), except the smallest tile of
  /// the default space, which runs any shape (clipped), so every valid shape has a config; for
  /// shapes over kMaxTunedFlops, BLOCK_N=64,BLOCK_K=512 alone.
  bool can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const override;
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;
  double flops(const Shape& shape) const override;
  double bytes(const Shape& shape) const override;
};

}  // namespace tunebench::bench
