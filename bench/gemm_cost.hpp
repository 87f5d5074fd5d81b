#pragma once
// The work and the least traffic of Y[M,N] = X[M,K] . W[N,K]^T, shared by every GEMM op.

#include "tunebench/shape.hpp"

namespace tunebench::bench {

/// Bytes per weight element: MXFP4 is 4 bits plus one 8-bit scale per 32 (OCP MX v1.0), 4.25
/// bits; BF16 is 2 bytes.
inline constexpr double kMxfp4WeightBytes = 0.53125;
inline constexpr double kBf16WeightBytes = 2.0;

/// 2*M*N*K: one multiply and one add per term.
inline double gemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }

/// weight_bytes*N*K + 2*M*K + 2*M*N: W and the BF16 X read once, the BF16 Y written once.
inline double gemm_bytes(double m, double n, double k, double weight_bytes) {
  return weight_bytes * n * k + 2.0 * m * k + 2.0 * m * n;
}

/// The shape's M, N, K as doubles, for the formulas above.
inline double dim(std::int64_t v) { return static_cast<double>(v); }

}  // namespace tunebench::bench
