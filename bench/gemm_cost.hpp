#pragma once
// The work and the least traffic of Y[M,N] = X[M,K] . W[N,K]^T, shared by every GEMM op.

#include <string>
#include <utility>

#include "tunebench/cuda.hpp"
#include "tunebench/op.hpp"
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

/// Peaks of a device known to tunebench, by name: for "H200", the device-to-device copy
/// bandwidth (4243 GB/s, read + write) and the BF16 GEMM rate of a library GEMM on random data
/// (790 TFLOP/s) measured on an H200 (docs/perf-mxfp4.md); {0, 0} for other devices. Measured
/// rather than datasheet peaks, so 100% is what the card was seen to reach.
inline std::pair<double, double> roofline_peaks(const std::string& device_name) {
  if (device_name.find("H200") != std::string::npos) return {4243e9, 790e12};
  return {0, 0};
}

/// roofline_peaks of `device` as the GPU GEMM ops (and the read floor) declare them.
inline RooflinePeaks measured_roofline(const DeviceInfo& device) {
  const auto [bytes_per_s, flops] = roofline_peaks(device.name);
  if (!(flops > 0)) return {};
  return {bytes_per_s, flops, "measured on an H200: 4243 GB/s device-to-device copy, 790 TFLOP/s BF16 GEMM"};
}

}  // namespace tunebench::bench
