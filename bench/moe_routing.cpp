#include "moe_routing.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "inputs.hpp"

namespace tunebench::bench {

MoeRouting route_tokens(const Shape& s, std::uint64_t seed) {
  if (s.m < 1 || s.top_k < 1 || s.top_k > s.experts || s.m * s.top_k >= (std::int64_t{1} << 31)) {
    throw std::invalid_argument(
        "route_tokens: expected M >= 1, 1 <= top_k <= experts and M * top_k < 2^31, got M=" + std::to_string(s.m) +
        " top_k=" + std::to_string(s.top_k) + " experts=" + std::to_string(s.experts));
  }
  Rng rng{seed * 0xD1B54A32D192ED03ull + 11};
  const std::int64_t pairs = s.m * s.top_k;
  std::vector<int> expert_of(static_cast<std::size_t>(pairs));
  std::vector<int> perm(static_cast<std::size_t>(s.experts));
  for (std::int64_t e = 0; e < s.experts; ++e) perm[e] = static_cast<int>(e);
  std::vector<std::int64_t> picks(static_cast<std::size_t>(s.top_k));
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.top_k; ++j) {  // partial Fisher-Yates: distinct experts
      const auto pick = j + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(s.experts - j)));
      std::swap(perm[j], perm[pick]);
      picks[j] = pick;
      expert_of[i * s.top_k + j] = perm[j];
    }
    // Back to the identity by undoing the swaps, latest first: top_k steps instead of `experts`
    // (prefill routes 16384 tokens over 256 experts), the same permutations as a fresh one.
    for (std::int64_t j = s.top_k - 1; j >= 0; --j) std::swap(perm[j], perm[picks[j]]);
  }
  MoeRouting r;
  r.expert_count.assign(static_cast<std::size_t>(s.experts), 0);
  for (int e : expert_of) ++r.expert_count[e];
  std::vector<int> offset(static_cast<std::size_t>(s.experts) + 1, 0);
  for (std::int64_t e = 0; e < s.experts; ++e) offset[e + 1] = offset[e] + r.expert_count[e];
  r.sorted.resize(static_cast<std::size_t>(pairs));
  for (std::int64_t p = 0; p < pairs; ++p) r.sorted[offset[expert_of[p]]++] = static_cast<int>(p);
  return r;
}

std::vector<int> a_rows(const MoeRouting& routing, bool pair_input, std::int64_t top_k) {
  std::vector<int> rows(routing.sorted.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i] = pair_input ? routing.sorted[i] : routing.sorted[i] / static_cast<int>(top_k);
  }
  return rows;
}

std::vector<ExpertGroup> active_groups(const MoeRouting& routing) {
  std::vector<ExpertGroup> groups;
  int first = 0;
  for (std::size_t e = 0; e < routing.expert_count.size(); ++e) {
    const int count = routing.expert_count[e];
    if (count > 0) groups.push_back({static_cast<int>(e), first, count});
    first += count;
  }
  return groups;
}

double expected_active_experts(std::int64_t experts, std::int64_t top_k, std::int64_t m) {
  const double e = static_cast<double>(experts);
  return e * (1.0 - std::pow(1.0 - static_cast<double>(top_k) / e, static_cast<double>(m)));
}

double moe_bytes(const Shape& s, double weight_bytes) {
  const double active = expected_active_experts(s.experts, s.top_k, s.m);
  const double pairs = static_cast<double>(s.m * s.top_k);
  const double rows_a = pair_input(s) ? pairs : static_cast<double>(s.m);
  const double n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  return active * weight_bytes * n * k + 2.0 * rows_a * k + 2.0 * pairs * n;
}

}  // namespace tunebench::bench
