#include "report/baseline_speedup.hpp"

#include <fstream>
#include <map>
#include <string>

#include "common/atomic_file.hpp"

namespace tunebench {
namespace {

double seconds_of(const nlohmann::json& entry) {
  static const std::map<std::string, double> unit = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  const auto u = unit.find(entry.value("time_unit", std::string("ns")));
  return entry.value("real_time", 0.0) * (u == unit.end() ? 1e-9 : u->second);
}

bool same_shape(const Shape& a, const Shape& b) {
  return a.set == b.set && a.gemm == b.gemm && a.m == b.m && a.n == b.n && a.k == b.k;
}

}  // namespace

int add_baseline_speedups(nlohmann::json& doc, const std::vector<Family>& families) {
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array()) return 0;
  std::map<std::string, const Family*> by_name;
  for (const auto& f : families) by_name[reported_name(f)] = &f;
  const auto family_of = [&](const nlohmann::json& e) -> const Family* {
    const auto it = by_name.find(e.value("run_name", std::string()));
    return it == by_name.end() ? nullptr : it->second;
  };
  // Each family's time for the comparison: its median, else its first iteration.
  std::map<const Family*, double> time_of;
  for (const auto& e : doc["benchmarks"]) {
    const Family* f = family_of(e);
    if (!f || e.value("error_occurred", false)) continue;
    const bool median =
        e.value("run_type", std::string()) == "aggregate" && e.value("aggregate_name", std::string()) == "median";
    const bool iteration = e.value("run_type", std::string()) == "iteration";
    if (median || (iteration && !time_of.count(f))) time_of[f] = seconds_of(e);
  }
  int added = 0;
  for (auto& e : doc["benchmarks"]) {
    const Family* f = family_of(e);
    if (!f || e.value("error_occurred", false) || f->op->baseline().empty()) continue;
    const std::string aggregate = e.value("aggregate_name", std::string());
    if (aggregate == "cv" || aggregate == "stddev") continue;
    const Family* base = nullptr;
    for (const auto& [b, t] : time_of) {
      if (b->op->name() == f->op->baseline() && same_shape(b->shape, f->shape)) base = b;
    }
    const double own = seconds_of(e);
    if (!base || !(own > 0)) continue;
    e["baseline_speedup"] = time_of[base] / own;
    ++added;
  }
  return added;
}

}  // namespace tunebench
