#include "cublaslt_gemm.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "tunebench/cuda.hpp"

namespace tunebench::bench {
namespace {

void lt_check(cublasStatus_t status, const std::string& who, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(who + ": " + call + ": " + cublasLtGetStatusName(status));
}

// Deleters run in destructors, so a failure is reported, never thrown.
void lt_report(cublasStatus_t status, const char* call) noexcept {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::cerr << "tunebench: cuBLASLt: " << call << ": " << cublasLtGetStatusName(status) << "\n";
  }
}

struct HandleDeleter {
  void operator()(cublasLtHandle_t h) const noexcept { lt_report(cublasLtDestroy(h), "cublasLtDestroy"); }
};
struct DescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const noexcept {
    lt_report(cublasLtMatmulDescDestroy(d), "cublasLtMatmulDescDestroy");
  }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayout_t l) const noexcept {
    lt_report(cublasLtMatrixLayoutDestroy(l), "cublasLtMatrixLayoutDestroy");
  }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const noexcept {
    lt_report(cublasLtMatmulPreferenceDestroy(p), "cublasLtMatmulPreferenceDestroy");
  }
};

using Handle = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, HandleDeleter>;
using Desc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, DescDeleter>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LayoutDeleter>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter>;

const std::shared_ptr<const DeviceBuffer>& non_null(const std::shared_ptr<const DeviceBuffer>& workspace,
                                                    const std::string& who) {
  if (!workspace) throw std::invalid_argument(who + ": CublasLtGemm given a null shared workspace");
  return workspace;
}

}  // namespace

struct CublasLtGemm::State {
  std::string who;
  std::int64_t m = 0, n = 0, k = 0;
  Handle handle;
  Desc desc;
  Layout a_layout, b_layout, d_layout;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  std::shared_ptr<const DeviceBuffer> workspace;

  Layout make_layout(std::uint64_t rows, std::uint64_t cols, std::int64_t ld) const {
    cublasLtMatrixLayout_t l = nullptr;
    lt_check(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, rows, cols, ld), who, "cublasLtMatrixLayoutCreate");
    return Layout(l);
  }
};

CublasLtGemm::CublasLtGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string who)
    : CublasLtGemm(m, n, k, std::move(who), kMaxWorkspaceBytes, nullptr) {}

CublasLtGemm::CublasLtGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string who,
                           std::shared_ptr<const DeviceBuffer> workspace)
    : CublasLtGemm(m, n, k, who, non_null(workspace, who)->bytes(), workspace) {}

CublasLtGemm::CublasLtGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string who, std::size_t max_ws,
                           std::shared_ptr<const DeviceBuffer> shared)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.who = std::move(who);
  s.m = m;
  s.n = n;
  s.k = k;
  cublasLtHandle_t handle = nullptr;
  lt_check(cublasLtCreate(&handle), s.who, "cublasLtCreate");
  s.handle.reset(handle);
  cublasLtMatmulDesc_t desc = nullptr;
  lt_check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), s.who, "cublasLtMatmulDescCreate");
  s.desc.reset(desc);
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a), s.who,
           "cublasLtMatmulDescSetAttribute");
  lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b), s.who,
           "cublasLtMatmulDescSetAttribute");
  // Row-major W[N,K], X[M,K] and Y[M,N] are column-major K x N, K x M and N x M.
  const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n), uk = static_cast<std::uint64_t>(k);
  s.a_layout = s.make_layout(uk, un, k);
  s.b_layout = s.make_layout(uk, um, k);
  s.d_layout = s.make_layout(un, um, n);

  cublasLtMatmulPreference_t pref_raw = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref_raw), s.who, "cublasLtMatmulPreferenceCreate");
  const Preference pref(pref_raw);
  lt_check(
      cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof max_ws),
      s.who, "cublasLtMatmulPreferenceSetAttribute");
  std::vector<cublasLtMatmulHeuristicResult_t> results(kRequestedAlgos);
  int returned = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle, desc, s.a_layout.get(), s.b_layout.get(), s.d_layout.get(),
                                     s.d_layout.get(), pref_raw, kRequestedAlgos, results.data(), &returned);
  // NOT_SUPPORTED means no algorithm fits: every algo then fails in run() with the count 0,
  // which says more than failing the whole workload here.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return;
  lt_check(st, s.who, "cublasLtMatmulAlgoGetHeuristic");
  std::size_t ws = 0;
  for (int i = 0; i < returned; ++i) {
    const auto& r = results[static_cast<std::size_t>(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    s.algos.push_back(r);
    ws = std::max(ws, r.workspaceSize);
  }
  s.workspace = shared ? std::move(shared) : std::make_shared<const DeviceBuffer>(ws);
}

CublasLtGemm::~CublasLtGemm() = default;

int CublasLtGemm::algos() const { return static_cast<int>(state_->algos.size()); }

void CublasLtGemm::run(std::int64_t algo, const void* w, const void* x, void* y, cudaStream_t stream) const {
  const State& s = *state_;
  if (algo < 0 || algo >= static_cast<std::int64_t>(s.algos.size())) {
    throw std::runtime_error(s.who + ": ALGO=" + std::to_string(algo) + " but cuBLASLt offered " +
                             std::to_string(s.algos.size()) + " algorithms for M=" + std::to_string(s.m) +
                             " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k));
  }
  for (const void* p : {w, x, static_cast<const void*>(y)}) {
    if (reinterpret_cast<std::uintptr_t>(p) % 256 != 0) {
      throw std::runtime_error(s.who + ": cuBLASLt operands must be 256-byte aligned (the heuristic assumed it)");
    }
  }
  const float alpha = 1.0f, beta = 0.0f;
  lt_check(cublasLtMatmul(s.handle.get(), s.desc.get(), &alpha, w, s.a_layout.get(), x, s.b_layout.get(), &beta, y,
                          s.d_layout.get(), y, s.d_layout.get(), &s.algos[static_cast<std::size_t>(algo)].algo,
                          s.workspace->get(), s.workspace->bytes(), stream),
           s.who, "cublasLtMatmul");
}

}  // namespace tunebench::bench
