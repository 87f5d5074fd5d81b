#include "report/latency_table.hpp"

#include "report/counters.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include "common/c_numbers.hpp"
#include "common/plural.hpp"

namespace tunebench {
namespace {

double unit_seconds(benchmark::TimeUnit u) {
  switch (u) {
    case benchmark::kNanosecond:
      return 1e-9;
    case benchmark::kMicrosecond:
      return 1e-6;
    case benchmark::kMillisecond:
      return 1e-3;
    case benchmark::kSecond:
      return 1;
  }
  return 1;
}

const char* unit_name(benchmark::TimeUnit u) {
  switch (u) {
    case benchmark::kNanosecond:
      return "ns";
    case benchmark::kMicrosecond:
      return "us";
    case benchmark::kMillisecond:
      return "ms";
    case benchmark::kSecond:
      return "s";
  }
  return "?";
}

std::string fmt(double v, const char* spec = "%.3g") { return format_c(spec, v); }

// The rate counters a run reported.
std::map<std::string, double> counters_of(const benchmark::BenchmarkReporter::Run& run) {
  std::map<std::string, double> out;
  for (const auto& c : rate_counters()) {
    if (const auto it = run.counters.find(c.name); it != run.counters.end()) out[c.name] = it->second.value;
  }
  return out;
}

}  // namespace

LatencyTableReporter::LatencyTableReporter(const std::vector<Family>& families, std::filesystem::path markdown_dir,
                                           OutputOptions options)
    : ConsoleReporter(options), markdown_dir_(std::move(markdown_dir)) {
  for (const auto& f : families) by_name_[reported_name(f)] = &f;
}

void LatencyTableReporter::ReportRuns(const std::vector<Run>& reports) {
  ConsoleReporter::ReportRuns(reports);
  for (const auto& run : reports) {
    const std::string name = run.run_name.str();
    const auto family = by_name_.find(name);
    if (family == by_name_.end()) continue;
    if (!rows_.count(name)) order_.push_back(name);
    Row& row = rows_[name];
    row.family = family->second;
    row.unit = unit_name(run.time_unit);
    row.unit_s = unit_seconds(run.time_unit);
    if (run.error_occurred) {
      row.status = run.error_message;
      continue;
    }
    if (!run.report_label.empty()) row.config = run.report_label;
    if (run.run_type == Run::RT_Iteration) {
      const auto start = run.counters.find("sm_mhz_start"), end = run.counters.find("sm_mhz_end");
      if (start != run.counters.end() && end != run.counters.end() && start->second.value > 0) {
        const double fall = 1 - end->second.value / start->second.value;
        if (row.clock_start == 0 || fall > 1 - row.clock_end / row.clock_start) {
          row.clock_start = start->second.value;
          row.clock_end = end->second.value;
        }
      }
    }
    if (run.run_type == Run::RT_Iteration && !row.have_median) {
      row.p50 = run.GetAdjustedRealTime();  // one run: its mean is the figure
      row.counters = counters_of(run);
    } else if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median") {
      row.have_median = true;
      row.p50 = run.GetAdjustedRealTime();
      row.counters = counters_of(run);
    } else if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "cv") {
      row.cv = run.real_accumulated_time;  // the cv aggregate carries the ratio itself
    }
  }
}

// The row of `row`'s baseline op on the same shape, if it ran and succeeded.
const LatencyTableReporter::Row* LatencyTableReporter::baseline_of(const Row& row) const {
  const std::string base = row.family->op->baseline();
  if (base.empty()) return nullptr;
  const Shape& s = row.family->shape;
  for (const auto& [name, other] : rows_) {
    const Shape& o = other.family->shape;
    if (other.family->op->name() == base && other.status == "ok" && o.set == s.set && o.gemm == s.gemm && o.m == s.m &&
        o.n == s.n && o.k == s.k) {
      return &other;
    }
  }
  return nullptr;
}

std::string LatencyTableReporter::markdown() const {
  std::string out;
  std::vector<std::string> sets;
  for (const auto& name : order_) {
    const auto& set = rows_.at(name).family->shape.set;
    if (std::find(sets.begin(), sets.end(), set) == sets.end()) sets.push_back(set);
  }
  int throttled = 0, measured = 0;
  for (const auto& set : sets) {
    bool baselines = false;
    for (const auto& name : order_) {
      const Row& r = rows_.at(name);
      baselines |= r.family->shape.set == set && r.status == "ok" && baseline_of(r);
    }
    std::string header = "| op | M | N | K | config | p50 | cv |", rule = "|---|---|---|---|---|---|---|";
    if (baselines) {
      header += " baseline p50 | speedup |";
      rule += "---|---|";
    }
    for (const auto& c : rate_counters()) {
      if (!c.in_table) continue;
      header += std::string(" ") + c.name + " |";
      rule += "---|";
    }
    out += "\n### " + set + "\n\n" + header + " status |\n" + rule + "---|\n";
    std::map<std::string, std::pair<double, std::string>> weighted;  // op -> sum, unit
    std::map<std::string, int> uncounted;
    for (const auto& name : order_) {
      const Row& r = rows_.at(name);
      const Shape& s = r.family->shape;
      if (s.set != set) continue;
      const bool ok = r.status == "ok";
      out += "| " + r.family->op->name() + " | " + std::to_string(s.m) + " | " + std::to_string(s.n) + " | " +
             std::to_string(s.k) + " | " + r.config + " | " + (ok ? fmt(r.p50) + " " + r.unit : "-") + " | " +
             (ok && r.cv >= 0 ? fmt(100 * r.cv, "%.2f") + "%" : "-") + " | ";
      if (baselines) {
        const Row* b = ok ? baseline_of(r) : nullptr;
        out += b ? b->family->op->name() + " " + fmt(b->p50) + " " + b->unit + " | " +
                       fmt(b->p50 * b->unit_s / (r.p50 * r.unit_s), "%.2f") + "x | "
                 : "- | - | ";
      }
      for (const auto& c : rate_counters()) {
        if (!c.in_table) continue;
        const auto v = r.counters.find(c.name);
        out += (ok && v != r.counters.end() ? fmt(v->second, c.format) : "-") + " | ";
      }
      measured += ok;
      std::string status = r.status;
      if (ok && r.throttled()) {
        ++throttled;
        status += " (SM clock " + fmt(r.clock_start, "%.0f") + " -> " + fmt(r.clock_end, "%.0f") + " MHz)";
      }
      out += status + " |\n";
      if (ok && s.calls) {
        auto& w = weighted[r.family->op->name()];
        w.first += static_cast<double>(*s.calls) * r.p50;
        w.second = r.unit;
      } else {
        ++uncounted[r.family->op->name()];
      }
    }
    for (const auto& [op, w] : weighted) {
      out += "\nTrace-weighted total of " + op + ": " + fmt(w.first, "%.6g") + " " + w.second +
             " (sum of calls x p50 over the shapes with call counts";
      if (uncounted[op])
        out += "; " + count_of(uncounted[op], "shape", "shapes") + " without counts or failed left out";
      out += ")\n";
    }
  }
  if (throttled > 0) {
    out += "\n" + std::to_string(throttled) + " of " + count_of(measured, "benchmark", "benchmarks") +
           " saw the SM clock fall by more than 5% inside a timing loop (" +
           (throttled == 1 ? "its status gives the start and end clock): the card throttled, and its time is"
                           : "their status gives the start and end clock): the card throttled, and their times are") +
           " of a slower clock\n";
  }
  return out;
}

void LatencyTableReporter::Finalize() {
  const std::string table = markdown();
  if (!table.empty()) GetOutputStream() << "\nLatency by shape set" << table;
  if (!markdown_dir_.empty() && !table.empty()) {
    std::ofstream(markdown_dir_ / "latency.md") << "# Latency by shape set\n" << table;
  }
  ConsoleReporter::Finalize();
}

}  // namespace tunebench
