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

WindowTimes attribute_graph_runs(std::vector<KernelRecord> records, const GraphLaunch& graph,
                                 const std::vector<std::size_t>& kernels_per_run, std::size_t launches) {
  WindowTimes out;
  const std::size_t runs = kernels_per_run.size() * launches;
  out.ns.assign(runs, 0);
  out.kernels.assign(runs, 0);
  const auto invalid = [](const KernelRecord& r) { return r.start_ns == 0 || r.end_ns == 0 || r.end_ns < r.start_ns; };
  const auto valid_end = std::remove_if(records.begin(), records.end(), invalid);
  out.invalid = static_cast<std::size_t>(records.end() - valid_end);
  records.erase(valid_end, records.end());
  const auto key = [](const KernelRecord& r) { return std::make_tuple(r.correlation_id, r.start_ns, r.end_ns); };
  std::sort(records.begin(), records.end(),
            [&](const KernelRecord& a, const KernelRecord& b) { return key(a) < key(b); });
  const auto unique_end = std::unique(records.begin(), records.end(),
                                      [&](const KernelRecord& a, const KernelRecord& b) { return key(a) == key(b); });
  out.duplicates = static_cast<std::size_t>(records.end() - unique_end);
  records.erase(unique_end, records.end());
  // CUPTI reports a graph's kernels under one of its two ids: the first that has records.
  std::uint32_t id = 0;
  for (const auto candidate : {graph.graph_id, graph.exec_id}) {
    if (candidate != 0 &&
        std::any_of(records.begin(), records.end(), [&](const KernelRecord& r) { return r.graph_id == candidate; })) {
      id = candidate;
      break;
    }
  }
  const auto theirs_end = std::partition(records.begin(), records.end(),
                                         [&](const KernelRecord& r) { return id != 0 && r.graph_id == id; });
  out.unattributed = static_cast<std::size_t>(records.end() - theirs_end);
  std::sort(records.begin(), theirs_end,
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  auto next = records.begin();
  for (std::size_t run = 0; run < runs && next != theirs_end; ++run) {
    for (std::size_t k = 0; k < kernels_per_run[run % kernels_per_run.size()] && next != theirs_end; ++k, ++next) {
      out.ns[run] += static_cast<std::int64_t>(next->end_ns - next->start_ns);
      ++out.kernels[run];
    }
  }
  out.unattributed += static_cast<std::size_t>(theirs_end - next);
  return out;
}

}  // namespace tunebench
