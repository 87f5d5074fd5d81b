#include "timing/kernel_records.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace tunebench {

WindowTimes attribute(const std::vector<KernelRecord>& records, const std::vector<WindowIds>& windows) {
  WindowTimes out;
  out.ns.assign(windows.size(), 0);
  out.kernels.assign(windows.size(), 0);
  std::unordered_map<std::uint32_t, std::size_t> window_of;
  for (std::size_t w = 0; w < windows.size(); ++w) {
    for (auto id : windows[w].calls) window_of.emplace(id, w);
  }
  const auto add = [&out](std::size_t w, const KernelRecord& r) {
    out.ns[w] += static_cast<std::int64_t>(r.end_ns - r.start_ns);
    ++out.kernels[w];
  };
  std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>> seen;
  std::map<std::uint32_t, std::vector<KernelRecord>> by_graph;  // not placed by launch
  for (const auto& r : records) {
    if (r.start_ns == 0 || r.end_ns == 0 || r.end_ns < r.start_ns) {
      ++out.invalid;
      continue;
    }
    if (!seen.emplace(r.correlation_id, r.start_ns, r.end_ns).second) {
      ++out.duplicates;
      continue;
    }
    if (const auto it = window_of.find(r.correlation_id); it != window_of.end()) {
      add(it->second, r);
    } else if (r.graph_id != 0) {
      by_graph[r.graph_id].push_back(r);
    } else {
      ++out.unattributed;
    }
  }
  for (auto& [id, list] : by_graph) {
    std::sort(list.begin(), list.end(),
              [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  }
  std::map<std::uint32_t, std::size_t> next;  // per graph id, the first record not yet dealt
  for (std::size_t w = 0; w < windows.size(); ++w) {
    for (const auto& g : windows[w].graphs) {
      for (const auto id : {g.graph_id, g.exec_id}) {
        const auto it = by_graph.find(id);
        if (id == 0 || it == by_graph.end()) continue;
        auto& i = next[id];
        for (std::size_t k = 0; k < g.kernels && i < it->second.size(); ++k) add(w, it->second[i++]);
        break;  // the first id with records is the one CUPTI reports
      }
    }
  }
  for (const auto& [id, list] : by_graph) out.unattributed += list.size() - next[id];
  return out;
}

}  // namespace tunebench
