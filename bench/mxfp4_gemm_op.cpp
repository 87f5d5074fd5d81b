// mxfp4_gemm, the dense MXFP4 GPU op: its workloads (cold weights in rotating copies) and its runs.
#include <algorithm>
#include <mutex>
#include <tuple>

#include "cublaslt_gemm.hpp"
#include "device_inputs.hpp"
#include "gemm_cost.hpp"
#include "inputs.hpp"
#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

namespace {

// A dense op's weights: as generated (packed, the reference's canonical form) and their device
// copies, enough to rotate through more than twice the L2. They depend on the geometry and the
// seed, not on M: the keys of one (N, K) share them, so a sweep or a run over the M of a set
// generates them once.
struct DenseWeights {
  PackedMxfp4 host;
  std::vector<DeviceWeights> copies;
};

struct DenseWorkload final : Mxfp4Workload {
  Shape shape;
  std::shared_ptr<DenseWeights> weights;
  const PackedMxfp4& w_host() const { return weights->host; }
  DeviceBuffer x, y, yacc;
  DeviceBuffer w_bf16;               // the dequantize-then-GEMM path's W, made on first use
  std::unique_ptr<CublasLtGemm> lt;  // its cuBLASLt state, likewise
  std::size_t calls = 0;
  std::size_t variants() const override { return weights->copies.size(); }
  std::vector<float> ref;  // computed on the first check
};

// The last few geometries' dense weights (a set has 2-4 of them), kept for the run.
std::mutex g_dense_mutex;
std::vector<std::pair<std::tuple<std::int64_t, std::int64_t, std::uint64_t, int, int>, std::shared_ptr<DenseWeights>>>
    g_dense;  // most recently used last
constexpr std::size_t kDenseKept = 4;

std::shared_ptr<DenseWeights> dense_weights(const Shape& shape, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi) {
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const auto key = std::make_tuple(shape.n, shape.k, seed, int(lo) << 8 | hi, device);
  std::lock_guard<std::mutex> lock(g_dense_mutex);
  const auto it = std::find_if(g_dense.begin(), g_dense.end(), [&](const auto& e) { return e.first == key; });
  if (it != g_dense.end()) {
    auto found = *it;
    g_dense.erase(it);
    g_dense.push_back(found);
    return found.second;
  }
  auto w = std::make_shared<DenseWeights>();
  // Random codes and scales are as random in the packed layout as in the canonical one.
  auto random = random_mxfp4(shape.n, shape.k, seed + 1, lo, hi);
  w->host = PackedMxfp4{shape.n, shape.k, std::move(random.codes), std::move(random.scales)};
  const std::size_t weight_bytes = w->host.codes.size() + w->host.scales.size();
  const std::size_t copies = std::max<std::size_t>(1, (2 * l2_bytes() + weight_bytes - 1) / weight_bytes);
  const auto first = upload_weights(w->host);
  for (std::size_t i = 0; i < copies; ++i) {
    DeviceWeights d{shape.n, shape.k, DeviceBuffer(weight_bytes - w->host.scales.size()),
                    DeviceBuffer(w->host.scales.size())};
    TUNEBENCH_CUDA_CHECK(cudaMemcpy(d.codes.get(), first->codes.get(), d.codes.bytes(), cudaMemcpyDeviceToDevice));
    TUNEBENCH_CUDA_CHECK(cudaMemcpy(d.scales.get(), first->scales.get(), d.scales.bytes(), cudaMemcpyDeviceToDevice));
    w->copies.push_back(std::move(d));
  }
  if (g_dense.size() >= kDenseKept) g_dense.erase(g_dense.begin());
  g_dense.emplace_back(key, w);
  return w;
}

}  // namespace

std::unique_ptr<Workload> Mxfp4GemmOp::prepare(const Shape& shape, std::uint64_t seed) const {
  auto w = std::make_unique<DenseWorkload>();
  w->shape = shape;
  w->weights = dense_weights(shape, seed, scale_lo_, scale_hi_);
  w->x = DeviceBuffer(static_cast<std::size_t>(shape.m * shape.k) * 2);
  fill_random_bf16(w->x.get(), shape.m * shape.k, seed, nullptr);
  w->y = DeviceBuffer(static_cast<std::size_t>(shape.m * shape.n) * 2);
  w->yacc = DeviceBuffer(static_cast<std::size_t>(shape.m * shape.n) * 4);
  TUNEBENCH_CUDA_CHECK(cudaMemset(w->yacc.get(), 0, w->yacc.bytes()));
  TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());  // the timing stream does not wait for the default one
  return w;
}

void Mxfp4GemmOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<DenseWorkload&>(work);
  const auto& weights = w.weights->copies[w.calls++ % w.weights->copies.size()];
  if (is_dequant_config(config)) {
    run_dequant(w, weights.codes.get(), weights.scales.get(), config, stream);
    return;
  }
  launch(config, w.x.get(), weights.codes.get(), weights.scales.get(), w.y.get(), w.yacc.as<float>(),
         static_cast<int>(w.shape.m), static_cast<int>(w.shape.n), static_cast<int>(w.shape.k),
         ceil_div(w.shape.m, config.get("BLOCK_M")), nullptr, nullptr, nullptr, stream);
}

void Mxfp4GemmOp::run_dequant(Workload& work, const void* wq, const void* ws, const Config& config,
                              cudaStream_t stream) const {
  auto& w = dynamic_cast<DenseWorkload&>(work);
  if (!w.lt) {
    w.w_bf16 = DeviceBuffer(static_cast<std::size_t>(w.shape.n * w.shape.k) * 2);
    w.lt = std::make_unique<CublasLtGemm>(w.shape.m, w.shape.n, w.shape.k, name());
  }
  dequantize(wq, ws, w.w_bf16.get(), w.shape.n, w.shape.k, stream);
  w.lt->run(config.get("ALGO"), w.w_bf16.get(), w.x.get(), w.y.get(), stream);
}

CheckResult Mxfp4GemmOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<DenseWorkload&>(work);
  if (w.ref.empty()) {
    const auto canonical = unpack_from_gpu(w.w_host().codes.data(), w.w_host().scales.data(), w.shape.k, 0, w.shape.n);
    w.ref.resize(static_cast<std::size_t>(w.shape.m * w.shape.n));
    reference_rows(download_bf16(w.x).data(), canonical, w.shape.m, w.ref.data());
  }
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.y.get(), 0xFF, w.y.bytes(), stream));  // bf16 NaN
  run(work, config, stream);
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  TUNEBENCH_CUDA_CHECK(cudaGetLastError());
  w.out.resize(w.ref.size());
  w.y.download(w.out.data(), w.out.size() * 2);
  return compare(w.out, w.ref);
}

double Mxfp4GemmOp::flops(const Shape& s) const { return gemm_flops(dim(s.m), dim(s.n), dim(s.k)); }

double Mxfp4GemmOp::bytes(const Shape& s) const { return gemm_bytes(dim(s.m), dim(s.n), dim(s.k), kMxfp4WeightBytes); }

}  // namespace tunebench::bench
