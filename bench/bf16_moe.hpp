#pragma once
// The BF16 grouped-GEMM baseline of mxfp4_moe: what a user would run instead of the MXFP4
// grouped kernel, the routed experts' weights dequantized to BF16 ahead of time and multiplied
// by cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx) or by one cuBLASLt GEMM per active
// expert, whichever the autotuner finds faster for the shape. mxfp4_moe must beat it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gemm_cost.hpp"
#include "moe_routing.hpp"
#include "tunebench/op.hpp"

namespace tunebench::bench {

class Mxfp4MoeOp;

/// One call of cublasGemmGroupedBatchedEx for a routing: its problems (one per active expert)
/// in the order cuBLAS takes them, group by group, and for each group the token count (cuBLAS's
/// n) its problems share and how many problems it holds.
struct GroupedGemmPlan {
  std::vector<ExpertGroup> problems;  ///< group 0's problems first; each expert once
  std::vector<int> group_rows;        ///< per group: the pairs (rows of Y) of each of its problems
  std::vector<int> group_size;        ///< per group: its number of problems, >= 1
};

/// The grouped GEMM of `groups` (active_groups of a routing): with `merge_equal_counts` false,
/// one group per expert in expert order; with it true, one group per distinct token count, in
/// increasing count, its experts in expert order (cuBLAS runs a group's problems as one batch
/// of equal shapes). Throws std::invalid_argument, naming the expert, for a count <= 0.
GroupedGemmPlan plan_grouped_gemm(const std::vector<ExpertGroup>& groups, bool merge_equal_counts);

/// bf16_moe: for every routed pair p = token * top_k + slot with expert e,
/// Y[p, :] = A[row(p), :] . W_e^T in BF16, accumulated in float (CUBLAS_COMPUTE_32F, float
/// alpha = 1, beta = 0) and rounded to BF16, with mxfp4_moe's routing, token counts and
/// geometry: the same routings (route_tokens with routing_seed, kMoeRoutings of them, cycled
/// by run()), A = X[M, K] and row(p) = token for w13, A = H[M * top_k, K] and row(p) = p for w2,
/// A and the weights the values mxfp4_moe's workload of the same seed holds (W_e its MXFP4
/// weights dequantized on the device: Mxfp4MoeOp::dequantized_weights). Name "bf16_moe", in
/// microseconds.
///
/// As the library's grouped GEMM needs each expert's rows contiguous, the op reads A already
/// permuted into expert order, A_sorted[i] = A[row(sorted[i])], and writes Y in that order,
/// Y_sorted[i] = Y[sorted[i]]: the gather before and the scatter after, which mxfp4_moe does
/// inside its kernel, are not timed, which favours the baseline. A_sorted is routing 0's
/// permutation for every routing (values do not change the time; one buffer instead of 8).
///
/// MERGE_COUNTS configs: per call one cublasGemmGroupedBatchedEx over the active experts: in cuBLAS's column-major
/// terms expert e computes Y_sorted_e^T[N, count] = op(W_e) . A_sorted_e^T with W_e stored as
/// K x N (ld K, transa T), A_sorted_e as K x count (ld K, transb N) and Y_sorted_e as N x count
/// (ld N). All E experts' BF16 weights live on the device, so the routings' experts come cold
/// from HBM at small M, as mxfp4_moe's do.
///
/// PER_EXPERT configs: per call one cublasLtMatmul per active expert, in expert order on the
/// stream, Y_sorted_e[count, N] = A_sorted_e[count, K] . W_e^T (CublasLtGemm of M = count; one
/// per distinct count, sharing the op's workspace). The grouped API picks one kernel for
/// problems of every size and reached 206-279 TFLOP/s at prefill on an H200 where dense
/// cuBLASLt reaches 700+, so a user with large expert groups would call cuBLASLt per expert;
/// time is the sum of the launches' kernel times, so the launch gaps between experts are not
/// counted, which favours the baseline.
///
/// Config: MERGE_COUNTS, how the problems are grouped (plan_grouped_gemm): 0, one group per
/// expert; 1, experts with equal token counts in one group. The grouped API offers no algorithm
/// choice; the grouping is what it lets one choose. Or PER_EXPERT=1,ALGO=a: each expert's GEMM
/// runs the a-th of the algorithms cuBLASLt's heuristic offers for its row count (its last one
/// where it offers fewer), a < kPerExpertAlgos. The same 6 configs in both spaces.
///
/// flops = 2 * M * top_k * N * K; bytes = moe_bytes(shape, 2): the expected active experts'
/// BF16 weights, A and Y, the least traffic of the problem (A counted as mxfp4_moe counts it).
class Bf16MoeOp final : public Op {
 public:
  /// Output rows check() compares with the float64 host reference, at most.
  static constexpr std::int64_t kCheckRows = 64;
  /// Workspace given to cuBLAS (cublasSetWorkspace), bytes (32 MiB): set once, so no call
  /// allocates.
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
  /// ALGO values of the PER_EXPERT configs: 0 .. kPerExpertAlgos - 1. Candidates 4..7 never
  /// won: their best took 1.02-3.8x the best of the other six at every prefill shape (H200, 2026-12-04,
  /// docs/results/perf_bf16_moe-per-expert-algo-0-7-h200-20261204.txt).
  static constexpr std::int64_t kPerExpertAlgos = 4;

  Bf16MoeOp();
  ~Bf16MoeOp() override;

  /// "bf16_moe".
  std::string name() const override { return "bf16_moe"; }
  /// Microseconds.
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  /// True: the op runs on a CUDA device.
  bool needs_gpu() const override { return true; }
  /// True: tokens are routed over experts (names carry E and topk).
  bool routed() const override { return true; }
  /// K a multiple of 32 and the MoE geometry, as mxfp4_moe (mxfp4::shape_rules(true)).
  ShapeRules shape_rules() const override;
  /// "cublas-<cublasGetProperty major.minor.patch>,cublaslt-<cublasLtGetVersion()>": the
  /// kernels change with the libraries.
  std::string kernel_version() const override;
  /// MERGE_COUNTS = 0, 1, then PER_EXPERT=1,ALGO = 0 .. kPerExpertAlgos - 1, for both kinds.
  std::vector<Config> config_space(SpaceKind kind) const override;
  /// M * top_k < 2^31 (cuBLAS's int counts and the routing's pair indices) and either
  /// MERGE_COUNTS 0 or 1, or PER_EXPERT=1 with 0 <= ALGO < kPerExpertAlgos and N, K multiples of
  /// 128 (cuBLASLt's 256-byte operand alignment at every expert's rows); false, never an
  /// exception, for any other config.
  bool can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const override;

  /// Makes the routings, A (host, kept for check()) and A_sorted, Y_sorted and the weights on
  /// the current device, the cuBLAS handle and its workspace. Throws std::invalid_argument for
  /// a shape without the MoE geometry or with K not a multiple of 32, CudaError for CUDA
  /// failures (cudaErrorMemoryAllocation when the card is full) and std::runtime_error naming
  /// the cuBLAS call and status for cuBLAS failures.
  std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const override;

  /// Enqueues the next routing's GEMMs on `stream`: one cublasGemmGroupedBatchedEx (its plan
  /// and device pointer arrays made on the first run of a MERGE_COUNTS, for every routing), or
  /// with PER_EXPERT=1 one cublasLtMatmul per active expert (the cuBLASLt states made on the
  /// first such run, for every routing's counts), so later runs never allocate. Throws
  /// ConfigError if `config` has neither MERGE_COUNTS nor PER_EXPERT=1 with ALGO,
  /// std::invalid_argument for MERGE_COUNTS not 0 or 1 or a negative ALGO, std::runtime_error
  /// naming the status if cuBLAS(Lt) fails or cuBLASLt offers no algorithm for a count. `work`
  /// must come from this op's prepare() (std::bad_cast otherwise).
  void run(Workload& work, const Config& config, cudaStream_t stream) const override;

  /// Fills Y_sorted with 0xFF bytes (BF16 NaN), runs routing 0 once with `config`, and
  /// compares with a float64 host GEMM of the same BF16 A and W_e (W_e read back from the
  /// device): the reference covers min(M * top_k, 64) sorted pairs evenly spaced from the
  /// first to the last (all N columns of each; the experts of both ends included), while
  /// all_finite covers every output. Synchronizes `stream`. Throws what run() throws and
  /// CudaError for CUDA failures.
  CheckResult check(Workload& work, const Config& config, cudaStream_t stream) const override;

  /// 2 * M * top_k * N * K.
  double flops(const Shape& shape) const override;
  /// moe_bytes(shape, 2).
  double bytes(const Shape& shape) const override;
  /// The H200's measured peaks (measured_roofline in gemm_cost.hpp).
  RooflinePeaks roofline_peaks(const DeviceInfo& device) const override { return measured_roofline(device); }

 private:
  std::unique_ptr<const Mxfp4MoeOp> weights_;  // makes the dequantized weights
};

/// The output (BF16 bits) of the last check() on a bf16_moe workload, in pair order (Y[p] for
/// p = token * top_k + slot, as mxfp4_moe's last_output), for tests that compare the two ops.
/// Throws std::invalid_argument for another op's workload or before any check().
std::vector<std::uint16_t> bf16_moe_output(const Workload& work);

}  // namespace tunebench::bench
