// mxfp4_moe, the grouped MXFP4 GPU op: its workloads (every expert's weights, 8 routings) and runs.
#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "device_inputs.hpp"
#include "gemm_cost.hpp"
#include "inputs.hpp"
#include "moe_routing.hpp"
#include "mxfp4_gpu_internal.hpp"

namespace tunebench::bench {

namespace {

constexpr int kRoutings = kMoeRoutings;

struct Routing {
  std::vector<int> sorted;  // pairs in expert order
  std::vector<int> expert_count;
  DeviceBuffer a_rows, out_rows;
  std::map<std::int64_t, std::pair<DeviceBuffer, int>> tiles;  // by BLOCK_M: tile list, count
};

struct MoeWorkload final : Mxfp4Workload {
  Shape shape;
  bool pair_input = false;  // w2: A has one row per routed pair
  std::int64_t rows_a = 0, pairs = 0;
  std::shared_ptr<DeviceWeights> w;
  DeviceBuffer a, y, yacc;
  std::vector<Routing> routings;
  std::size_t calls = 0;
  std::size_t variants() const override { return routings.size(); }
  std::vector<float> ref;  // routing 0
};

// Weights of all experts of one geometry stay on the device for the whole run: regenerating
// gigabytes per benchmark would dominate it.
std::mutex g_weights_mutex;
std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t, int, int>, std::shared_ptr<DeviceWeights>> g_weights;

std::shared_ptr<DeviceWeights> moe_weights(const Shape& s, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi) {
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(g_weights_mutex);
  auto key = std::make_tuple(s.experts * s.n, s.k, seed, int(lo) << 8 | hi, device);
  auto& slot = g_weights[key];
  if (!slot) {
    // Made on the device: the bytes random_mxfp4 would make (as random in the packed layout as in
    // the canonical one), without seconds of host time and a copy per geometry.
    auto w = std::make_shared<DeviceWeights>();
    w->rows = s.experts * s.n;
    w->cols = s.k;
    w->codes = DeviceBuffer(static_cast<std::size_t>(w->rows * w->cols / 2));
    w->scales = DeviceBuffer(static_cast<std::size_t>(w->rows * w->cols / mxfp4::kBlock));
    fill_random_mxfp4(w->codes.get(), w->scales.get(), w->rows, w->cols, seed + 1, lo, hi, nullptr);
    TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    slot = std::move(w);
  }
  return slot;
}

Routing make_routing(const Shape& s, bool pair_input, std::uint64_t seed) {
  MoeRouting routed = route_tokens(s, seed);
  const std::vector<int> rows = a_rows(routed, pair_input, s.top_k);
  Routing r;
  r.sorted = std::move(routed.sorted);
  r.expert_count = std::move(routed.expert_count);
  r.a_rows = DeviceBuffer(rows.size() * sizeof(int));
  r.a_rows.upload(rows.data(), rows.size() * sizeof(int));
  r.out_rows = DeviceBuffer(r.sorted.size() * sizeof(int));
  r.out_rows.upload(r.sorted.data(), r.sorted.size() * sizeof(int));
  return r;
}

// One tile per BLOCK_M run of an expert's pairs: {expert, first sorted pair, count, 0}.
std::pair<DeviceBuffer, int>& tiles_for(Routing& r, std::int64_t block_m) {
  auto it = r.tiles.find(block_m);
  if (it != r.tiles.end()) return it->second;
  std::vector<int> tiles;
  int start = 0;
  for (std::size_t e = 0; e < r.expert_count.size(); ++e) {
    for (int i = 0; i < r.expert_count[e]; i += static_cast<int>(block_m)) {
      tiles.insert(tiles.end(),
                   {static_cast<int>(e), start + i, std::min(static_cast<int>(block_m), r.expert_count[e] - i), 0});
    }
    start += r.expert_count[e];
  }
  DeviceBuffer buf(tiles.size() * sizeof(int));
  buf.upload(tiles.data(), tiles.size() * sizeof(int));
  return r.tiles[block_m] = {std::move(buf), static_cast<int>(tiles.size() / 4)};
}

}  // namespace

bool Mxfp4MoeOp::can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const {
  return Mxfp4GpuOp::can_implement(config, shape, device) && shape.m * shape.top_k < (1LL << 31);
}

namespace {
std::mutex g_bf16_mutex;
std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t, int, int>, std::shared_ptr<const DeviceBuffer>>
    g_bf16_weights;
}  // namespace

std::shared_ptr<const DeviceBuffer> Mxfp4MoeOp::dequantized_weights(const Shape& shape, std::uint64_t seed) const {
  const std::int64_t rows = shape.experts * shape.n;
  if (rows <= 0 || rows % 16 != 0 || shape.k <= 0 || shape.k % 32 != 0) {
    throw std::invalid_argument("mxfp4_moe: dequantized weights need experts * N a multiple of 16 and K of 32, got " +
                                std::to_string(rows) + " x " + std::to_string(shape.k));
  }
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const auto packed = moe_weights(shape, seed, scale_lo_, scale_hi_);
  std::lock_guard<std::mutex> lock(g_bf16_mutex);
  auto& slot = g_bf16_weights[std::make_tuple(rows, shape.k, seed, int(scale_lo_) << 8 | scale_hi_, device)];
  if (!slot) {
    auto wb = std::make_shared<DeviceBuffer>(static_cast<std::size_t>(rows * shape.k) * 2);
    dequantize(packed->codes.get(), packed->scales.get(), wb->get(), rows, shape.k, nullptr);
    TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
    slot = std::move(wb);
  }
  return slot;
}

std::unique_ptr<Workload> Mxfp4MoeOp::prepare(const Shape& shape, std::uint64_t seed) const {
  auto w = std::make_unique<MoeWorkload>();
  w->shape = shape;
  w->pair_input = pair_input(shape);
  w->pairs = shape.m * shape.top_k;
  w->rows_a = w->pair_input ? w->pairs : shape.m;
  w->w = moe_weights(shape, seed, scale_lo_, scale_hi_);
  w->a = DeviceBuffer(static_cast<std::size_t>(w->rows_a * shape.k) * 2);
  fill_random_bf16(w->a.get(), w->rows_a * shape.k, seed, nullptr);
  w->y = DeviceBuffer(static_cast<std::size_t>(w->pairs * shape.n) * 2);
  w->yacc = DeviceBuffer(static_cast<std::size_t>(w->pairs * shape.n) * 4);
  TUNEBENCH_CUDA_CHECK(cudaMemset(w->yacc.get(), 0, w->yacc.bytes()));
  // Independent generators: made side by side, the same routings as one after the other.
  w->routings.resize(kRoutings);
  int device = 0;
  TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
  std::vector<std::exception_ptr> failed(kRoutings);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < kRoutings; ++i) {
    try {
      TUNEBENCH_CUDA_CHECK(cudaSetDevice(device));  // a new thread starts on device 0
      w->routings[i] = make_routing(shape, w->pair_input, routing_seed(seed, i));
    } catch (...) {
      failed[i] = std::current_exception();
    }
  }
  for (const auto& f : failed) {
    if (f) std::rethrow_exception(f);
  }
  TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());  // the timing stream does not wait for the default one
  return w;
}

void Mxfp4MoeOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<MoeWorkload&>(work);
  // Tile lists for every routing on the first run of a BLOCK_M, so later runs (in a captured
  // CUDA graph, say) never allocate.
  for (auto& routing : w.routings) tiles_for(routing, config.get("BLOCK_M"));
  launch_routing(w, w.calls++ % w.routings.size(), config, stream);
}

void Mxfp4MoeOp::launch_routing(Workload& work, std::size_t routing, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<MoeWorkload&>(work);
  Routing& r = w.routings[routing];
  auto& [tiles, count] = tiles_for(r, config.get("BLOCK_M"));
  launch(config, w.a.get(), w.w->codes.get(), w.w->scales.get(), w.y.get(), w.yacc.as<float>(),
         static_cast<int>(w.pairs), static_cast<int>(w.shape.n), static_cast<int>(w.shape.k), count, tiles.get(),
         r.a_rows.as<int>(), r.out_rows.as<int>(), stream);
}

CheckResult Mxfp4MoeOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<MoeWorkload&>(work);
  const Shape& s = w.shape;
  Routing& r = w.routings[0];
  if (w.ref.empty()) {
    w.ref.assign(static_cast<std::size_t>(w.pairs * s.n), 0.0f);
    const std::size_t expert_codes = static_cast<std::size_t>(s.n * s.k / 2), expert_scales = expert_codes / 16;
    std::vector<std::uint8_t> codes(expert_codes), scales(expert_scales);
    const std::vector<std::uint16_t> a_host = download_bf16(w.a);
    std::size_t start = 0;
    for (std::int64_t e = 0; e < s.experts; ++e) {
      const int count = r.expert_count[e];
      if (count == 0) continue;
      TUNEBENCH_CUDA_CHECK(cudaMemcpy(codes.data(), w.w->codes.as<std::uint8_t>() + e * expert_codes, expert_codes,
                                      cudaMemcpyDeviceToHost));
      TUNEBENCH_CUDA_CHECK(cudaMemcpy(scales.data(), w.w->scales.as<std::uint8_t>() + e * expert_scales, expert_scales,
                                      cudaMemcpyDeviceToHost));
      const auto canonical = unpack_from_gpu(codes.data(), scales.data(), s.k, 0, s.n);
      std::vector<std::uint16_t> rows(static_cast<std::size_t>(count * s.k));
      for (int i = 0; i < count; ++i) {
        const int p = r.sorted[start + i];
        const std::int64_t src = w.pair_input ? p : p / s.top_k;
        std::copy_n(a_host.data() + src * s.k, s.k, rows.data() + i * s.k);
      }
      std::vector<float> out(static_cast<std::size_t>(count * s.n));
      reference_rows(rows.data(), canonical, count, out.data());
      for (int i = 0; i < count; ++i) {
        std::copy_n(out.data() + i * s.n, s.n, w.ref.data() + static_cast<std::int64_t>(r.sorted[start + i]) * s.n);
      }
      start += count;
    }
  }
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.y.get(), 0xFF, w.y.bytes(), stream));
  launch_routing(w, 0, config, stream);
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  TUNEBENCH_CUDA_CHECK(cudaGetLastError());
  w.out.resize(w.ref.size());
  w.y.download(w.out.data(), w.out.size() * 2);
  return compare(w.out, w.ref);
}

double Mxfp4MoeOp::flops(const Shape& s) const { return gemm_flops(dim(s.m * s.top_k), dim(s.n), dim(s.k)); }

double Mxfp4MoeOp::bytes(const Shape& s) const { return moe_bytes(s, kMxfp4WeightBytes); }

}  // namespace tunebench::bench
