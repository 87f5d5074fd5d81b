// What both MXFP4 GPU ops' workloads use: device weights, the float reference, the comparison.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cpu_mxfp4_gemm.hpp"
#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

std::shared_ptr<DeviceWeights> upload_weights(const PackedMxfp4& w) {
  auto d = std::make_shared<DeviceWeights>();
  d->rows = w.rows;
  d->cols = w.cols;
  d->codes = DeviceBuffer(w.codes.size());
  d->codes.upload(w.codes.data(), w.codes.size());
  d->scales = DeviceBuffer(w.scales.size());
  d->scales.upload(w.scales.data(), w.scales.size());
  return d;
}

std::size_t l2_bytes() {
  int device = 0, l2 = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  TUNEBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return static_cast<std::size_t>(l2);
}

CheckResult compare(const std::vector<std::uint16_t>& out, const std::vector<float>& ref) {
  CheckResult r;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = mxfp4::bf16_to_float(out[i]);
    if (!std::isfinite(o)) r.all_finite = false;
    diff += (o - ref[i]) * (o - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  r.checked = out.size();
  r.rel_error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  if (!std::isfinite(r.rel_error)) r.all_finite = false;
  return r;
}

// Float reference: the CPU GEMM's fp32 sums before rounding, so the check measures the GPU's
// error alone.
void reference_rows(const std::uint16_t* a, const mxfp4::Matrix& w, std::int64_t rows, float* out) {
  cpu_mxfp4_gemm_f32(a, w, out, rows, 64, std::min<std::int64_t>(512, w.cols));
}

std::vector<std::uint16_t> last_output(const Workload& work) {
  if (auto* w = dynamic_cast<const Mxfp4Workload*>(&work)) return w->out;
  throw std::invalid_argument("last_output: not an MXFP4 op's workload");
}

}  // namespace tunebench::bench
