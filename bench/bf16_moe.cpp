#include "bf16_moe.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "cublaslt_gemm.hpp"
#include "inputs.hpp"
#include "mxfp4.hpp"
#include "mxfp4_gpu.hpp"

namespace tunebench::bench {

GroupedGemmPlan plan_grouped_gemm(const std::vector<ExpertGroup>& groups, bool merge_equal_counts) {
  GroupedGemmPlan plan;
  for (const auto& g : groups) {
    if (g.count <= 0) {
      throw std::invalid_argument("plan_grouped_gemm: expert " + std::to_string(g.expert) + " has count " +
                                  std::to_string(g.count) + ", expected > 0");
    }
  }
  if (!merge_equal_counts) {
    for (const auto& g : groups) {
      plan.problems.push_back(g);
      plan.group_rows.push_back(g.count);
      plan.group_size.push_back(1);
    }
    return plan;
  }
  std::map<int, std::vector<ExpertGroup>> by_count;  // ordered: increasing count
  for (const auto& g : groups) by_count[g.count].push_back(g);
  for (const auto& [count, members] : by_count) {
    plan.problems.insert(plan.problems.end(), members.begin(), members.end());
    plan.group_rows.push_back(count);
    plan.group_size.push_back(static_cast<int>(members.size()));
  }
  return plan;
}

namespace {

void cublas_check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("bf16_moe: ") + call + ": " + cublasGetStatusName(status));
}

struct CublasDeleter {
  void operator()(cublasHandle_t h) const noexcept {
    const cublasStatus_t st = cublasDestroy(h);
    if (st != CUBLAS_STATUS_SUCCESS)
      std::cerr << "tunebench: cuBLAS: cublasDestroy: " << cublasGetStatusName(st) << "\n";
  }
};
using CublasHandle = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, CublasDeleter>;

// One routing's call for one MERGE_COUNTS: the host arrays per group and the device arrays of
// pointers per problem, as cublasGemmGroupedBatchedEx takes them.
struct GroupedCall {
  std::vector<cublasOperation_t> trans_a, trans_b;
  std::vector<int> m, n, k, lda, ldb, ldc, group_size;
  std::vector<float> alpha, beta;
  DeviceBuffer a_ptrs, b_ptrs, c_ptrs;
};

struct MoeRoutingState {
  MoeRouting routing;
  std::vector<ExpertGroup> groups;
  std::map<std::int64_t, GroupedCall> calls;  // by MERGE_COUNTS
};

struct Bf16MoeWorkload final : Workload {
  Shape shape;
  std::int64_t pairs = 0, rows_a = 0;
  std::vector<std::uint16_t> a_host;      // A[rows_a, K] as mxfp4_moe's workload holds it
  std::shared_ptr<const DeviceBuffer> w;  // BF16 [E * N, K]
  DeviceBuffer a_sorted, y;
  std::vector<MoeRoutingState> routings;
  CublasHandle handle;
  std::shared_ptr<const DeviceBuffer> workspace;  // cuBLAS's and every per-expert GEMM's
  // PER_EXPERT=1: one cuBLASLt GEMM per distinct token count, over every routing.
  std::map<int, std::unique_ptr<const CublasLtGemm>> lt_by_count;
  std::size_t calls = 0;
  std::size_t variants() const override { return routings.size(); }
  std::vector<std::uint16_t> out;  // Y in pair order, of the last check
};

GroupedCall make_call(const Bf16MoeWorkload& w, const std::vector<ExpertGroup>& groups, bool merge) {
  const GroupedGemmPlan plan = plan_grouped_gemm(groups, merge);
  const auto groups_n = plan.group_rows.size();
  const int n = static_cast<int>(w.shape.n), k = static_cast<int>(w.shape.k);
  GroupedCall c;
  c.trans_a.assign(groups_n, CUBLAS_OP_T);
  c.trans_b.assign(groups_n, CUBLAS_OP_N);
  c.m.assign(groups_n, n);
  c.n = plan.group_rows;
  c.k.assign(groups_n, k);
  c.lda.assign(groups_n, k);
  c.ldb.assign(groups_n, k);
  c.ldc.assign(groups_n, n);
  c.group_size = plan.group_size;
  c.alpha.assign(groups_n, 1.0f);
  c.beta.assign(groups_n, 0.0f);
  std::vector<const void*> a, b;
  std::vector<void*> cc;
  const auto* wbase = w.w->as<const std::uint16_t>();
  for (const auto& p : plan.problems) {
    a.push_back(wbase + static_cast<std::int64_t>(p.expert) * w.shape.n * w.shape.k);
    b.push_back(w.a_sorted.as<const std::uint16_t>() + static_cast<std::int64_t>(p.first) * w.shape.k);
    cc.push_back(w.y.as<std::uint16_t>() + static_cast<std::int64_t>(p.first) * w.shape.n);
  }
  const std::size_t bytes = plan.problems.size() * sizeof(void*);
  c.a_ptrs = DeviceBuffer(bytes);
  c.a_ptrs.upload(a.data(), bytes);
  c.b_ptrs = DeviceBuffer(bytes);
  c.b_ptrs.upload(b.data(), bytes);
  c.c_ptrs = DeviceBuffer(bytes);
  c.c_ptrs.upload(cc.data(), bytes);
  return c;
}

std::int64_t merge_counts(const Config& config) {
  const std::int64_t v = config.get("MERGE_COUNTS");
  if (v != 0 && v != 1) {
    throw std::invalid_argument("bf16_moe: MERGE_COUNTS=" + std::to_string(v) + ", expected 0 or 1");
  }
  return v;
}

// The per-expert GEMMs' states, made for every routing's counts before the first launch, so
// later runs (graph captures among them) never allocate.
void make_per_expert(Bf16MoeWorkload& w) {
  if (!w.lt_by_count.empty()) return;
  for (const auto& r : w.routings) {
    for (const auto& g : r.groups) {
      auto& lt = w.lt_by_count[g.count];
      if (!lt) lt = std::make_unique<const CublasLtGemm>(g.count, w.shape.n, w.shape.k, "bf16_moe", w.workspace);
    }
  }
}

std::int64_t per_expert_algo(const Config& config) {
  const std::int64_t algo = config.get("ALGO");
  if (algo < 0) throw std::invalid_argument("bf16_moe: ALGO=" + std::to_string(algo) + ", expected >= 0");
  return algo;
}

// One cublasLtMatmul per active expert: Y_sorted_e[count, N] = A_sorted_e[count, K] . W_e^T.
void launch_per_expert(Bf16MoeWorkload& w, std::size_t routing, std::int64_t algo, cudaStream_t stream) {
  make_per_expert(w);
  const auto* wbase = w.w->as<const std::uint16_t>();
  for (const auto& g : w.routings[routing].groups) {
    const CublasLtGemm& lt = *w.lt_by_count.at(g.count);
    if (lt.algos() == 0) {
      throw std::runtime_error("bf16_moe: cuBLASLt offered no algorithm for " + std::to_string(g.count) +
                               " rows, N=" + std::to_string(w.shape.n) + " K=" + std::to_string(w.shape.k));
    }
    lt.run(std::min<std::int64_t>(algo, lt.algos() - 1),
           wbase + static_cast<std::int64_t>(g.expert) * w.shape.n * w.shape.k,
           w.a_sorted.as<const std::uint16_t>() + static_cast<std::int64_t>(g.first) * w.shape.k,
           w.y.as<std::uint16_t>() + static_cast<std::int64_t>(g.first) * w.shape.n, stream);
  }
}

GroupedCall& call_for(Bf16MoeWorkload& w, MoeRoutingState& r, std::int64_t merge) {
  auto it = r.calls.find(merge);
  if (it != r.calls.end()) return it->second;
  return r.calls[merge] = make_call(w, r.groups, merge == 1);
}

void launch_grouped(Bf16MoeWorkload& w, std::size_t routing, std::int64_t merge, cudaStream_t stream) {
  for (auto& r : w.routings) call_for(w, r, merge);  // every routing's arrays before any launch
  GroupedCall& c = call_for(w, w.routings[routing], merge);
  cublas_check(cublasSetStream(w.handle.get(), stream), "cublasSetStream");
  cublas_check(
      cublasGemmGroupedBatchedEx(w.handle.get(), c.trans_a.data(), c.trans_b.data(), c.m.data(), c.n.data(), c.k.data(),
                                 c.alpha.data(), c.a_ptrs.as<const void* const>(), CUDA_R_16BF, c.lda.data(),
                                 c.b_ptrs.as<const void* const>(), CUDA_R_16BF, c.ldb.data(), c.beta.data(),
                                 c.c_ptrs.as<void* const>(), CUDA_R_16BF, c.ldc.data(),
                                 static_cast<int>(c.group_size.size()), c.group_size.data(), CUBLAS_COMPUTE_32F),
      "cublasGemmGroupedBatchedEx");
}

bool per_expert(const Config& config) { return config.has("PER_EXPERT") && config.get("PER_EXPERT") == 1; }

void launch(Bf16MoeWorkload& w, std::size_t routing, const Config& config, cudaStream_t stream) {
  if (per_expert(config)) {
    launch_per_expert(w, routing, per_expert_algo(config), stream);
  } else {
    launch_grouped(w, routing, merge_counts(config), stream);
  }
}

}  // namespace

Bf16MoeOp::Bf16MoeOp() : weights_(std::make_unique<const Mxfp4MoeOp>(false)) {}
Bf16MoeOp::~Bf16MoeOp() = default;

ShapeRules Bf16MoeOp::shape_rules() const { return mxfp4::shape_rules(true); }

std::string Bf16MoeOp::kernel_version() const {
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  const std::string v = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  return "cublas-" + v + ",cublaslt-" + std::to_string(cublasLtGetVersion());
}

std::vector<Config> Bf16MoeOp::config_space(SpaceKind) const {
  std::vector<Config> space = cartesian_product({{"MERGE_COUNTS", {0, 1}}});
  for (const Config& c : cartesian_product({{"PER_EXPERT", {1}}, {"ALGO", {0, 1, 2, 3}}})) space.push_back(c);
  return space;
}

bool Bf16MoeOp::can_implement(const Config& config, const Shape& shape, const DeviceInfo&) const {
  if (shape.m * shape.top_k >= (std::int64_t{1} << 31)) return false;
  if (config.has("PER_EXPERT")) {
    // cuBLASLt's operands must be 256-byte aligned: every expert's rows of A_sorted and
    // Y_sorted, and every W_e, start at a multiple of K or N BF16 elements.
    return config.get("PER_EXPERT") == 1 && config.has("ALGO") && config.get("ALGO") >= 0 &&
           config.get("ALGO") < kPerExpertAlgos && shape.n % 128 == 0 && shape.k % 128 == 0;
  }
  if (!config.has("MERGE_COUNTS")) return false;
  const std::int64_t v = config.get("MERGE_COUNTS");
  return v == 0 || v == 1;
}

std::unique_ptr<Workload> Bf16MoeOp::prepare(const Shape& shape, std::uint64_t seed) const {
  if (shape.experts <= 0 || shape.top_k <= 0 || shape.m <= 0 || shape.n <= 0 || shape.k <= 0 ||
      shape.k % mxfp4::kBlock != 0) {
    throw std::invalid_argument(
        "bf16_moe: expected M, N, K > 0, K a multiple of 32 and the MoE geometry, got M=" + std::to_string(shape.m) +
        " N=" + std::to_string(shape.n) + " K=" + std::to_string(shape.k) + " E=" + std::to_string(shape.experts) +
        " topk=" + std::to_string(shape.top_k));
  }
  auto w = std::make_unique<Bf16MoeWorkload>();
  w->shape = shape;
  w->pairs = shape.m * shape.top_k;
  w->rows_a = pair_input(shape) ? w->pairs : shape.m;
  w->w = weights_->dequantized_weights(shape, seed);
  w->routings.resize(kMoeRoutings);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < kMoeRoutings; ++i) {
    w->routings[static_cast<std::size_t>(i)].routing = route_tokens(shape, routing_seed(seed, i));
  }
  for (auto& r : w->routings) r.groups = active_groups(r.routing);

  w->a_host = random_bf16(static_cast<std::size_t>(w->rows_a * shape.k), seed);
  const std::vector<int> rows = a_rows(w->routings[0].routing, pair_input(shape), shape.top_k);
  {
    std::vector<std::uint16_t> sorted(static_cast<std::size_t>(w->pairs * shape.k));
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < w->pairs; ++i) {
      std::copy_n(w->a_host.data() + static_cast<std::int64_t>(rows[static_cast<std::size_t>(i)]) * shape.k, shape.k,
                  sorted.data() + i * shape.k);
    }
    w->a_sorted = DeviceBuffer(sorted.size() * 2);
    w->a_sorted.upload(sorted.data(), sorted.size() * 2);
  }
  w->y = DeviceBuffer(static_cast<std::size_t>(w->pairs * shape.n) * 2);

  cublasHandle_t h = nullptr;
  cublas_check(cublasCreate(&h), "cublasCreate");
  w->handle.reset(h);
  w->workspace = std::make_shared<const DeviceBuffer>(kWorkspaceBytes);
  cublas_check(cublasSetWorkspace(h, w->workspace->get(), w->workspace->bytes()), "cublasSetWorkspace");
  // run() enqueues on non-blocking streams, which do not wait for the legacy stream the
  // uploads above went to.
  TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  return w;
}

void Bf16MoeOp::run(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<Bf16MoeWorkload&>(work);
  launch(w, w.calls++ % w.routings.size(), config, stream);
}

CheckResult Bf16MoeOp::check(Workload& work, const Config& config, cudaStream_t stream) const {
  auto& w = dynamic_cast<Bf16MoeWorkload&>(work);
  const Shape& s = w.shape;
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(w.y.get(), 0xFF, w.y.bytes(), stream));  // BF16 NaN
  launch(w, 0, config, stream);
  std::vector<std::uint16_t> y(static_cast<std::size_t>(w.pairs * s.n));
  TUNEBENCH_CUDA_CHECK(cudaMemcpyAsync(y.data(), w.y.get(), y.size() * 2, cudaMemcpyDeviceToHost, stream));
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));

  const MoeRouting& r = w.routings[0].routing;
  CheckResult result;
  w.out.assign(y.size(), 0);
  for (std::int64_t i = 0; i < w.pairs; ++i) {
    std::copy_n(y.data() + i * s.n, s.n,
                w.out.data() + static_cast<std::int64_t>(r.sorted[static_cast<std::size_t>(i)]) * s.n);
  }
  for (const std::uint16_t v : y) {
    if (!std::isfinite(mxfp4::bf16_to_float(v))) {
      result.all_finite = false;
      break;
    }
  }

  // Evenly spaced sorted pairs, first and last included: the first and the last active expert
  // are always among them.
  const std::int64_t rows = std::min(w.pairs, kCheckRows);
  std::map<int, std::vector<std::int64_t>> by_expert;  // each expert's W read back once
  const auto& groups = w.routings[0].groups;
  for (std::int64_t j = 0; j < rows; ++j) {
    const std::int64_t i = rows == 1 ? 0 : j * (w.pairs - 1) / (rows - 1);
    const auto g = std::upper_bound(groups.begin(), groups.end(), i,
                                    [](std::int64_t v, const ExpertGroup& e) { return v < e.first; }) -
                   1;
    by_expert[g->expert].push_back(i);
  }
  const auto rows_w = static_cast<std::size_t>(s.n * s.k);
  std::vector<std::uint16_t> wb(rows_w);
  std::vector<float> wf(rows_w);
  const std::vector<int> src = a_rows(r, pair_input(s), s.top_k);
  double err2 = 0, ref2 = 0;
  for (const auto& [expert, sample] : by_expert) {
    TUNEBENCH_CUDA_CHECK(cudaMemcpy(wb.data(),
                                    w.w->as<const std::uint16_t>() + static_cast<std::int64_t>(expert) * s.n * s.k,
                                    rows_w * 2, cudaMemcpyDeviceToHost));
    for (std::size_t t = 0; t < rows_w; ++t) wf[t] = mxfp4::bf16_to_float(wb[t]);
    for (const std::int64_t i : sample) {
      std::vector<double> ar(static_cast<std::size_t>(s.k));
      const std::uint16_t* arow = w.a_host.data() + static_cast<std::int64_t>(src[static_cast<std::size_t>(i)]) * s.k;
      for (std::int64_t t = 0; t < s.k; ++t) ar[static_cast<std::size_t>(t)] = mxfp4::bf16_to_float(arow[t]);
#pragma omp parallel for reduction(+ : err2, ref2) schedule(static)
      for (std::int64_t col = 0; col < s.n; ++col) {
        const float* wr = wf.data() + col * s.k;
        double ref = 0;
        for (std::int64_t t = 0; t < s.k; ++t) ref += ar[static_cast<std::size_t>(t)] * static_cast<double>(wr[t]);
        const double got = mxfp4::bf16_to_float(y[static_cast<std::size_t>(i * s.n + col)]);
        err2 += (got - ref) * (got - ref);
        ref2 += ref * ref;
      }
    }
  }
  result.checked = static_cast<std::size_t>(rows * s.n);
  result.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return result;
}

std::vector<std::uint16_t> bf16_moe_output(const Workload& work) {
  const auto* w = dynamic_cast<const Bf16MoeWorkload*>(&work);
  if (w == nullptr) throw std::invalid_argument("bf16_moe_output: not a bf16_moe workload");
  if (w->out.empty()) throw std::invalid_argument("bf16_moe_output: no check() has run on this workload");
  return w->out;
}

double Bf16MoeOp::flops(const Shape& s) const { return gemm_flops(dim(s.m * s.top_k), dim(s.n), dim(s.k)); }

double Bf16MoeOp::bytes(const Shape& s) const { return moe_bytes(s, kBf16WeightBytes); }

}  // namespace tunebench::bench
