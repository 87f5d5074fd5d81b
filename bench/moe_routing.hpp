#pragma once
// The routing of a MoE layer's tokens over its experts, shared by the grouped ops (mxfp4_moe and
// its BF16 baseline bf16_moe), so that both time the same token counts per expert.

#include <cstdint>
#include <vector>

#include "tunebench/shape.hpp"

namespace tunebench::bench {

/// Routings a grouped op's workload cycles through (Workload::variants), so that consecutive
/// runs at small M hit other experts and find none of their weights in L2.
inline constexpr int kMoeRoutings = 8;

/// One routing of M tokens top_k over E experts. Routed pair p = token * top_k + slot.
struct MoeRouting {
  /// The M * top_k pairs in expert order (expert 0's pairs first), each expert's in pair order.
  std::vector<int> sorted;
  /// Pairs per expert, E entries, summing to M * top_k.
  std::vector<int> expert_count;
};

/// Routes shape.m tokens over shape.experts experts, shape.top_k distinct experts per token,
/// uniformly (a partial Fisher-Yates shuffle per token, splitmix64 seeded from `seed`), the
/// same on every machine. Throws std::invalid_argument, naming the values, unless m >= 1,
/// 1 <= top_k <= experts and m * top_k < 2^31 (pair indices are int, as the kernels take them).
MoeRouting route_tokens(const Shape& shape, std::uint64_t seed);

/// The seed of routing `index` (0 .. kMoeRoutings - 1) of a grouped op's workload made from
/// `workload_seed`: both grouped ops use it, so their routing i is the same.
inline std::uint64_t routing_seed(std::uint64_t workload_seed, int index) {
  return workload_seed + 1000 + static_cast<std::uint64_t>(index);
}

/// True for a geometry whose A operand has one row per routed pair (w2: the activations of
/// each pair); false for w13 (shape.gemm == "w13"), whose A is X with one row per token.
inline bool pair_input(const Shape& shape) { return shape.gemm != "w13"; }

/// The A row each sorted pair reads: sorted[i] for a pair input (w2), sorted[i] / top_k (the
/// token) for w13.
std::vector<int> a_rows(const MoeRouting& routing, bool pair_input, std::int64_t top_k);

/// One expert's share of a grouped GEMM: the `count` (> 0) consecutive sorted pairs from
/// `first`, all multiplied by expert `expert`'s weights.
struct ExpertGroup {
  int expert = 0;
  int first = 0;
  int count = 0;
  bool operator==(const ExpertGroup& o) const { return expert == o.expert && first == o.first && count == o.count; }
};

/// The experts `routing` hits, in expert order, each with its run of sorted pairs; experts with
/// no pair are left out.
std::vector<ExpertGroup> active_groups(const MoeRouting& routing);

/// The expected number of distinct experts M tokens hit, top_k distinct each of E uniformly:
/// E * (1 - (1 - top_k / E)^M) (each expert is missed by one token with probability
/// 1 - top_k / E, independently across tokens).
double expected_active_experts(std::int64_t experts, std::int64_t top_k, std::int64_t m);

/// The least traffic of one grouped GEMM of `shape`, in bytes: the expected active experts'
/// weights (weight_bytes per element, N x K each), A read once (2 bytes per BF16 element;
/// M rows for w13, M * top_k for w2) and the BF16 Y of the M * top_k pairs written once:
/// E_active * weight_bytes * N * K + 2 * rows(A) * K + 2 * M * top_k * N.
double moe_bytes(const Shape& shape, double weight_bytes);

}  // namespace tunebench::bench
