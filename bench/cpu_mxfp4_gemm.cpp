#include "cpu_mxfp4_gemm.hpp"

#include "gemm_cost.hpp"
#include "inputs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tunebench::bench {
namespace {

struct GemmWorkload final : Workload {
  GemmInputs in;
  std::vector<std::uint16_t> y;
};

}  // namespace

namespace {

template <class Store>
void gemm_blocked(const std::uint16_t* x, const mxfp4::Matrix& w, std::int64_t m, std::int64_t block_n,
                  std::int64_t block_k, Store store) {
  const std::int64_t n = w.rows, k = w.cols;
  if (m <= 0 || block_n <= 0 || block_k <= 0 || block_k % mxfp4::kBlock != 0) {
    throw std::invalid_argument("cpu_mxfp4_gemm: expected M > 0, BLOCK_N > 0 and BLOCK_K a positive multiple of 32");
  }
  std::vector<float> xf(static_cast<std::size_t>(m * k));
  for (std::size_t i = 0; i < xf.size(); ++i) xf[i] = mxfp4::bf16_to_float(x[i]);

  const std::int64_t n_blocks = (n + block_n - 1) / block_n;
#pragma omp parallel
  {
    std::vector<float> wt(static_cast<std::size_t>(block_n * block_k));
    std::vector<float> acc(static_cast<std::size_t>(m * block_n));
#pragma omp for schedule(static)
    for (std::int64_t nb = 0; nb < n_blocks; ++nb) {
      const std::int64_t n0 = nb * block_n, bn = std::min(block_n, n - n0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::int64_t k0 = 0; k0 < k; k0 += block_k) {
        const std::int64_t bk = std::min(block_k, k - k0);
        mxfp4::dequantize(w, n0, bn, k0, bk, wt.data(), block_k);
        for (std::int64_t i = 0; i < m; ++i) {
          const float* xr = xf.data() + i * k + k0;
          for (std::int64_t j = 0; j < bn; ++j) {
            const float* wr = wt.data() + j * block_k;
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (std::int64_t t = 0; t < bk; ++t) s += xr[t] * wr[t];
            acc[i * block_n + j] += s;
          }
        }
      }
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < bn; ++j) {
          store(i * n + n0 + j, acc[i * block_n + j]);
        }
      }
    }
  }
}

}  // namespace

void cpu_mxfp4_gemm(const std::uint16_t* x, const mxfp4::Matrix& w, std::uint16_t* y, std::int64_t m,
                    std::int64_t block_n, std::int64_t block_k) {
  gemm_blocked(x, w, m, block_n, block_k, [y](std::int64_t i, float v) { y[i] = mxfp4::float_to_bf16(v); });
}

void cpu_mxfp4_gemm_f32(const std::uint16_t* x, const mxfp4::Matrix& w, float* y, std::int64_t m, std::int64_t block_n,
                        std::int64_t block_k) {
  gemm_blocked(x, w, m, block_n, block_k, [y](std::int64_t i, float v) { y[i] = v; });
}

GemmInputs make_gemm_inputs(std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  GemmInputs in;
  in.m = m;
  in.n = n;
  in.k = k;
  Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
  in.x.resize(static_cast<std::size_t>(m * k));
  for (auto& v : in.x) v = mxfp4::float_to_bf16(rng.uniform(-1.0f, 1.0f));
  std::vector<float> wf(static_cast<std::size_t>(n * k));
  for (std::size_t b = 0; b < wf.size(); b += mxfp4::kBlock) {
    const float magnitude = std::exp2(std::floor(rng.uniform(-8.0f, 8.0f)));
    for (int i = 0; i < mxfp4::kBlock; ++i) wf[b + i] = magnitude * rng.uniform(-6.0f, 6.0f);
  }
  in.w = mxfp4::quantize(wf.data(), n, k);
  return in;
}

std::vector<Config> CpuMxfp4GemmOp::config_space(SpaceKind kind) const {
  if (kind == SpaceKind::kExpanded) {
    return cartesian_product(
        {{"BLOCK_N", {4, 8, 16, 32, 64, 128, 256}}, {"BLOCK_K", {64, 128, 256, 512, 1024, 2048, 4096}}});
  }
  return cartesian_product({{"BLOCK_N", {16, 64, 256}}, {"BLOCK_K", {128, 512, 2048}}});
}

bool CpuMxfp4GemmOp::can_implement(const Config& config, const Shape& shape, const DeviceInfo&) const {
  // Sweeping a shape that takes seconds per run on a CPU would take many minutes: such shapes
  // get the default tile alone (a sweep of one config is not timed).
  if (flops(shape) > kMaxTunedFlops) return config == Config{{"BLOCK_N", 64}, {"BLOCK_K", 512}};
  // A tile larger than the problem is clipped to it, so it would only repeat a smaller config.
  return config.get("BLOCK_N") <= std::max<std::int64_t>(shape.n, 16) &&
         config.get("BLOCK_K") <= std::max<std::int64_t>(shape.k, 128);
}

std::unique_ptr<Workload> CpuMxfp4GemmOp::prepare(const Shape& shape, std::uint64_t seed) const {
  auto work = std::make_unique<GemmWorkload>();
  work->in = make_gemm_inputs(shape.m, shape.n, shape.k, seed);
  work->y.resize(static_cast<std::size_t>(shape.m * shape.n));
  return work;
}

void CpuMxfp4GemmOp::run(Workload& work, const Config& config, cudaStream_t) const {
  auto& w = dynamic_cast<GemmWorkload&>(work);
  cpu_mxfp4_gemm(w.in.x.data(), w.in.w, w.y.data(), w.in.m, config.get("BLOCK_N"), config.get("BLOCK_K"));
}

double CpuMxfp4GemmOp::flops(const Shape& s) const { return gemm_flops(dim(s.m), dim(s.n), dim(s.k)); }

double CpuMxfp4GemmOp::bytes(const Shape& s) const {
  return gemm_bytes(dim(s.m), dim(s.n), dim(s.k), kMxfp4WeightBytes);
}

}  // namespace tunebench::bench
