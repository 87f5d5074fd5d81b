#pragma once
// The cuBLASLt BF16 GEMM baseline: what a user would run instead of an MXFP4-weight kernel,
// with the MXFP4 weights dequantized to BF16 ahead of time. The MXFP4 kernels must beat it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cublaslt_gemm.hpp"
#include "gemm_cost.hpp"
#include "tunebench/op.hpp"

namespace tunebench::bench {

/// Y[M,N] (BF16, row-major) = X[M,K] (BF16, row-major) . W[N,K]^T (BF16, row-major) through
/// cublasLtMatmul, accumulating in float (CUBLAS_COMPUTE_32F, float alpha = 1, beta = 0) and
/// rounding to BF16. W is the dequantized MXFP4 matrix the MXFP4 ops read, so both compute the
/// same product. Name "bf16_gemm", timed by CUDA events in microseconds.
///
/// Inputs (prepare): X = random_bf16(M*K, seed); W = dequantize(random_mxfp4(N, K, seed + 1,
/// 115, 128)) converted to BF16, which is exact (an E2M1 value times a power of two).
///
/// In cuBLASLt's column-major terms it computes Y^T[N,M] = op(A) . op(B) with A = W stored as a
/// K x N matrix (ld K, opA = T), B = X stored as K x M (ld K, opB = N) and C = D = Y stored as
/// N x M (ld N).
///
/// Cold weights, as in serving, where each layer's weights are read once per step and evicted
/// by the other layers: prepare() keeps enough copies of W that together they exceed twice the
/// current device's L2 (cudaDevAttrL2CacheSize), at least one, and run() reads copy
/// (calls % copies), so consecutive iterations never find their weights in L2. X and Y stay
/// warm, as the activations of a serving step do.
///
/// Config: ALGO, an index into the algorithms cublasLtMatmulAlgoGetHeuristic returns for the
/// shape (at most 8 requested, ordered by cuBLASLt's estimated time, workspace at most 32 MiB;
/// only results whose state is CUBLAS_STATUS_SUCCESS are kept). The same 8 values 0..7 in both
/// spaces. can_implement is always true (the heuristic is only known once a workload exists);
/// run() throws std::runtime_error for an ALGO at or beyond offered_algos().
///
/// flops = 2*M*N*K (one multiply and one add per term); bytes = 2*N*K + 2*M*K + 2*M*N: the
/// least traffic of Op::bytes, BF16 W and X read once and BF16 Y written once.
class Bf16GemmOp final : public Op {
 public:
  /// Algorithms requested from the cuBLASLt heuristic: the size of the ALGO axis.
  static constexpr int kRequestedAlgos = CublasLtGemm::kRequestedAlgos;
  /// Largest workspace the heuristic may pick an algorithm for, in bytes (32 MiB).
  static constexpr std::size_t kMaxWorkspaceBytes = CublasLtGemm::kMaxWorkspaceBytes;
  /// Output rows check() compares with the float64 host reference, at most.
  static constexpr std::int64_t kCheckRows = 64;

  /// "bf16_gemm".
  std::string name() const override { return "bf16_gemm"; }
  /// Microseconds.
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  /// True: the op runs on a CUDA device.
  bool needs_gpu() const override { return true; }
  /// False: one dense GEMM per shape, no experts.
  bool routed() const override { return false; }
  /// K a multiple of 32, the MXFP4 block: its BF16 weights are the MXFP4 ops' weights
  /// dequantized (mxfp4::shape_rules(), defined in bf16_gemm.cpp).
  ShapeRules shape_rules() const override;
  /// "cublasLt-<cublasLtGetVersion()>": the algorithms offered change with the library.
  std::string kernel_version() const override;
  /// ALGO = 0..7 for both kinds.
  std::vector<Config> config_space(SpaceKind kind) const override;

  /// Builds the inputs on the host, uploads X and the copies of W to the current device,
  /// allocates Y and the workspace, and creates the cuBLASLt handle, matmul descriptor and
  /// layouts and runs the heuristic once, so run() is only the cublasLtMatmul call. Throws
  /// CudaError for CUDA failures (cudaErrorMemoryAllocation when the card is full),
  /// std::runtime_error naming the cuBLASLt call and status for cuBLASLt failures, and
  /// std::invalid_argument for a bad shape (K not a multiple of 32, a dimension <= 0).
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;

  /// Enqueues one cublasLtMatmul with algorithm ALGO on `stream`, reading the next copy of W.
  /// Throws ConfigError if `config` has no ALGO, std::runtime_error (one line, saying how many
  /// algorithms cuBLASLt offered for the shape) if ALGO is negative or >= offered_algos(), and
  /// std::runtime_error naming the cuBLASLt status if cublasLtMatmul fails. `work` must come
  /// from this op's prepare() (std::bad_cast otherwise).
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;

  /// Fills Y with 0xFF bytes (BF16 NaN), runs once with `config`, copies Y back and compares it
  /// with a float64 host GEMM of the same BF16 X and W. To keep large shapes quick the
  /// reference covers a deterministic sample of min(M, 64) rows (all N columns of each; rows
  /// evenly spaced from the first to the last): rel_error = ||out - ref||_2 / ||ref||_2 and
  /// `checked` are over those rows, while all_finite covers every one of the M*N outputs, so a
  /// row left unwritten is still caught. Synchronizes `stream`. Throws what run() throws (an
  /// unusable config is an exception, never a pass) and CudaError for CUDA failures.
  CheckResult check(Workload& work, const Config& config, cudaStream_t stream) const override;

  /// How many algorithms the cuBLASLt heuristic offered for `work`'s shape (0..8): the ALGO
  /// values that run. `work` must come from this op's prepare() (std::bad_cast otherwise).
  int offered_algos(const Workload& work) const;

  /// 2*M*N*K.
  double flops(const Shape& shape) const override;
  /// 2*N*K + 2*M*K + 2*M*N bytes.
  double bytes(const Shape& shape) const override;
  /// The H200's measured peaks (measured_roofline in gemm_cost.hpp).
  RooflinePeaks roofline_peaks(const DeviceInfo& device) const override { return measured_roofline(device); }
};

}  // namespace tunebench::bench
