#include "tunebench/kernel_records.hpp"

#include <set>
#include <tuple>
#include <unordered_map>

namespace tunebench {

WindowTimes attribute(const std::vector<KernelRecord>& records,
                      const std::vector<std::vector<std::uint32_t>>& window_ids) {
  WindowTimes out;
  out.ns.assign(window_ids.size(), 0);
  out.kernels.assign(window_ids.size(), 0);
  std::unordered_map<std::uint32_t, std::size_t> window_of;
  for (std::size_t w = 0; w < window_ids.size(); ++w) {
    for (auto id : window_ids[w]) window_of.emplace(id, w);
  }
  std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>> seen;
  for (const auto& r : records) {
    if (r.start_ns == 0 || r.end_ns == 0 || r.end_ns < r.start_ns) {
      ++out.invalid;
      continue;
    }
    if (!seen.emplace(r.correlation_id, r.start_ns, r.end_ns).second) {
      ++out.duplicates;
      continue;
    }
    const auto it = window_of.find(r.correlation_id);
    if (it == window_of.end()) {
      ++out.unattributed;
      continue;
    }
    out.ns[it->second] += static_cast<std::int64_t>(r.end_ns - r.start_ns);
    ++out.kernels[it->second];
  }
  return out;
}

}  // namespace tunebench
