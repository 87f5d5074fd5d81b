#include "bf16_gemm.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "cublaslt_gemm.hpp"
#include "gemm_cost.hpp"
#include "inputs.hpp"
#include "mxfp4.hpp"

namespace tunebench::bench {
namespace {

// cuBLASLt's heuristic assumes 256-byte aligned operands unless told otherwise, so every copy of
// W starts on such a boundary.
constexpr std::size_t kCopyAlign = 256;

struct Bf16Workload final : Workload {
  std::int64_t m = 0, n = 0, k = 0;
  std::vector<std::uint16_t> x, w;  // host BF16 bits, kept for check()'s reference
  DeviceBuffer x_dev, w_dev, y_dev;
  std::size_t w_stride = 0;  // bytes from one copy of W to the next
  std::size_t copies = 1;
  std::size_t calls = 0;
  std::size_t variants() const override { return copies; }
  std::unique_ptr<CublasLtGemm> lt;
};

}  // namespace

ShapeRules Bf16GemmOp::shape_rules() const { return mxfp4::shape_rules(); }

std::string Bf16GemmOp::kernel_version() const { return "cublasLt-" + std::to_string(cublasLtGetVersion()); }

std::vector<Config> Bf16GemmOp::config_space(SpaceKind) const {
  std::vector<std::int64_t> algos(kRequestedAlgos);
  for (int i = 0; i < kRequestedAlgos; ++i) algos[static_cast<std::size_t>(i)] = i;
  return cartesian_product({{"ALGO", algos}});
}

std::unique_ptr<Workload> Bf16GemmOp::prepare(const Shape& shape, std::uint64_t seed) const {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.k % mxfp4::kBlock != 0) {
    throw std::invalid_argument(
        "bf16_gemm: expected M, N, K > 0 and K a multiple of 32, got M=" + std::to_string(shape.m) +
        " N=" + std::to_string(shape.n) + " K=" + std::to_string(shape.k));
  }
  auto work = std::make_unique<Bf16Workload>();
  const std::int64_t m = shape.m, n = shape.n, k = shape.k;
  work->m = m;
  work->n = n;
  work->k = k;
  const auto mk = static_cast<std::size_t>(m * k), nk = static_cast<std::size_t>(n * k);

  work->x = random_bf16(mk, seed);
  {
    const mxfp4::Matrix q = random_mxfp4(n, k, seed + 1, 115, 128);
    std::vector<float> wf(nk);
    mxfp4::dequantize(q, 0, n, 0, k, wf.data(), k);
    work->w.resize(nk);
    for (std::size_t i = 0; i < nk; ++i) work->w[i] = mxfp4::float_to_bf16(wf[i]);
  }

  int device = 0, l2 = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  TUNEBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const std::size_t w_bytes = nk * sizeof(std::uint16_t);
  work->copies = 2 * static_cast<std::size_t>(l2) / w_bytes + 1;
  work->w_stride = (w_bytes + kCopyAlign - 1) / kCopyAlign * kCopyAlign;

  work->x_dev = DeviceBuffer(mk * sizeof(std::uint16_t));
  work->x_dev.upload(work->x.data(), mk * sizeof(std::uint16_t));
  work->w_dev = DeviceBuffer(work->copies * work->w_stride);
  work->w_dev.upload(work->w.data(), w_bytes);
  auto* w0 = work->w_dev.as<char>();
  for (std::size_t c = 1; c < work->copies; ++c) {
    TUNEBENCH_CUDA_CHECK(cudaMemcpy(w0 + c * work->w_stride, w0, w_bytes, cudaMemcpyDeviceToDevice));
  }
  work->y_dev = DeviceBuffer(static_cast<std::size_t>(m * n) * sizeof(std::uint16_t));

  work->lt = std::make_unique<CublasLtGemm>(m, n, k, "bf16_gemm");
  // run() enqueues on non-blocking streams, which do not wait for the legacy stream the copies
  // above went to.
  TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  return work;
}

int Bf16GemmOp::offered_algos(const Workload& work) const {
  return dynamic_cast<const Bf16Workload&>(work).lt->algos();
}

void Bf16GemmOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<Bf16Workload&>(work);
  const std::int64_t algo = config.get("ALGO");
  const void* weights = w.w_dev.as<const char>() + (w.calls % w.copies) * w.w_stride;
  ++w.calls;
  w.lt->run(algo, weights, w.x_dev.get(), w.y_dev.get(), stream);
}

CheckResult Bf16GemmOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<Bf16Workload&>(work);
  const std::size_t mn = static_cast<std::size_t>(w.m * w.n);
  // 0xFFFF is a BF16 NaN: any output the run fails to write cannot pass.
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.y_dev.get(), 0xFF, mn * sizeof(std::uint16_t), stream));
  run(work, config, stream);
  std::vector<std::uint16_t> y(mn);
  TUNEBENCH_CUDA_CHECK(
      cudaMemcpyAsync(y.data(), w.y_dev.get(), mn * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));

  CheckResult result;
  for (const std::uint16_t v : y) {
    if (!std::isfinite(mxfp4::bf16_to_float(v))) {
      result.all_finite = false;
      break;
    }
  }

  // Evenly spaced rows, first and last included: decode shapes use every row, prefill shapes a
  // sample that still sees both ends of the output, where tiling edge cases live.
  const std::int64_t rows = std::min(w.m, kCheckRows);
  std::vector<std::int64_t> sample(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    sample[static_cast<std::size_t>(i)] = rows == 1 ? 0 : i * (w.m - 1) / (rows - 1);
  }
  // Float holds BF16 exactly at half the memory of double; products are formed in double.
  std::vector<float> wf(w.w.size());
  for (std::size_t i = 0; i < wf.size(); ++i) wf[i] = mxfp4::bf16_to_float(w.w[i]);

  double err2 = 0, ref2 = 0;
  for (const std::int64_t r : sample) {
    std::vector<double> xr(static_cast<std::size_t>(w.k));
    for (std::int64_t t = 0; t < w.k; ++t) {
      xr[static_cast<std::size_t>(t)] = mxfp4::bf16_to_float(w.x[static_cast<std::size_t>(r * w.k + t)]);
    }
#pragma omp parallel for reduction(+ : err2, ref2) schedule(static)
    for (std::int64_t j = 0; j < w.n; ++j) {
      const float* wr = wf.data() + j * w.k;
      double ref = 0;
      for (std::int64_t t = 0; t < w.k; ++t) {
        ref += xr[static_cast<std::size_t>(t)] * static_cast<double>(wr[t]);
      }
      const double got = mxfp4::bf16_to_float(y[static_cast<std::size_t>(r * w.n + j)]);
      err2 += (got - ref) * (got - ref);
      ref2 += ref * ref;
    }
  }
  result.checked = static_cast<std::size_t>(rows * w.n);
  result.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return result;
}

double Bf16GemmOp::flops(const Shape& s) const { return gemm_flops(dim(s.m), dim(s.n), dim(s.k)); }

double Bf16GemmOp::bytes(const Shape& s) const { return gemm_bytes(dim(s.m), dim(s.n), dim(s.k), kBf16WeightBytes); }

}  // namespace tunebench::bench
