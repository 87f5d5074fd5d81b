#pragma once
// One BF16 GEMM shape prepared for cuBLASLt, shared by the BF16 baseline (bf16_gemm) and the
// dequantize-then-GEMM path of mxfp4_gemm.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tunebench/cuda.hpp"

namespace tunebench::bench {

/// Y[M,N] (BF16, row-major) = X[M,K] (BF16, row-major) . W[N,K]^T (BF16, row-major) through
/// cublasLtMatmul, accumulating in float (CUBLAS_COMPUTE_32F, float alpha = 1, beta = 0) and
/// rounding to BF16.
///
/// In cuBLASLt's column-major terms it computes Y^T[N,M] = op(A) . op(B) with A = W stored as a
/// K x N matrix (ld K, opA = T), B = X stored as K x M (ld K, opB = N) and C = D = Y stored as
/// N x M (ld N). Operands must be 256-byte aligned: the heuristic assumes it.
///
/// The algorithms are those cublasLtMatmulAlgoGetHeuristic returns for the shape (at most
/// kRequestedAlgos, ordered by cuBLASLt's estimated time, workspace at most kMaxWorkspaceBytes;
/// only results whose state is CUBLAS_STATUS_SUCCESS are kept), found once at construction.
class CublasLtGemm {
 public:
  /// Algorithms requested from the cuBLASLt heuristic.
  static constexpr int kRequestedAlgos = 8;
  /// Largest workspace the heuristic may pick an algorithm for, in bytes (32 MiB).
  static constexpr std::size_t kMaxWorkspaceBytes = std::size_t{32} << 20;

  /// Creates the handle, matmul descriptor and layouts for M x N x K (each > 0), runs the
  /// heuristic and allocates the largest workspace the kept algorithms need on the current
  /// device. `who` (an op name) prefixes every error message. Throws std::runtime_error naming
  /// the cuBLASLt call and status, CudaError for the workspace allocation. No algorithm fitting
  /// (CUBLAS_STATUS_NOT_SUPPORTED) is not an error: algos() is then 0.
  CublasLtGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string who);
  /// The same, but every run uses `workspace` (device memory the caller keeps alive and never
  /// uses concurrently with this GEMM's runs) and the heuristic picks among the algorithms that
  /// fit in its bytes(): many shapes run one after the other on one stream (a grouped GEMM
  /// as one call per group) then share one allocation. Throws std::invalid_argument for a null
  /// `workspace`, and what the other constructor throws.
  CublasLtGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string who,
               std::shared_ptr<const DeviceBuffer> workspace);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// How many algorithms the heuristic offered (0..kRequestedAlgos): the valid `algo` indices.
  int algos() const;

  /// Enqueues one cublasLtMatmul with algorithm `algo` on `stream`: y = x . w^T (device
  /// pointers, BF16). Throws std::runtime_error (one line, saying how many algorithms cuBLASLt
  /// offered for the shape) if `algo` is negative or >= algos(), and std::runtime_error naming
  /// the status if cublasLtMatmul fails, or if an operand is not 256-byte aligned.
  void run(std::int64_t algo, const void* w, const void* x, void* y, cudaStream_t stream) const;

 private:
  CublasLtGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string who, std::size_t max_workspace,
               std::shared_ptr<const DeviceBuffer> shared_workspace);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tunebench::bench
