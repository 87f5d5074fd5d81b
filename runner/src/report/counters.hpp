#pragma once
// The rate counters every benchmark reports and the latency table shows: one table, so the
// benchmark body that writes a counter and the reporter that reads it agree on its name. A new
// column of the latency table is a new row here.

#include <benchmark/benchmark.h>

#include <optional>
#include <vector>

namespace tunebench {

/// What one timing loop measured, and what its counters are computed from.
struct LoopFigures {
  double flops = 0;       ///< Op::flops of the shape, per run
  double bytes = 0;       ///< Op::bytes of the shape, per run
  double iterations = 0;  ///< runs timed
  double seconds = 0;     ///< their summed (manual) time, > 0
  bool gpu = false;       ///< a GPU op
  double peak_flops = 0;  ///< roofline peaks of the device (0: unknown)
  double peak_bytes_per_s = 0;
};

/// One counter and its latency-table column.
struct CounterSpec {
  const char* name;    ///< in Google Benchmark's output and JSON, e.g. "TFLOP/s"
  const char* format;  ///< printf format of its latency-table cell, e.g. "%.3g"
  /// Its value, or nothing when it does not apply (roofline% without known peaks).
  std::optional<double> (*value)(const LoopFigures& figures);
  /// Whether the latency table shows it: the dashboard counters repeat TFLOP/s and GB/s in the
  /// units and names that dashboards' Google Benchmark adapters look for.
  bool in_table = true;
};

/// The counters, in the latency table's column order: TFLOP/s = flops x iterations / seconds /
/// 1e12; GB/s = bytes x iterations / seconds / 1e9; roofline% (GPU ops with known peaks) =
/// 100 x max(flops / peak_flops, bytes / peak_bytes_per_s) x iterations / seconds, the time the
/// roofline allows over the time measured; bytes_per_second = bytes x iterations / seconds and
/// items_per_second = flops x iterations / seconds (the names Google Benchmark's own
/// SetBytesProcessed / SetItemsProcessed use, which dashboards' adapters record in preference to
/// cpu_time: conbench and Arrow's archery take cpu_time unless the name has "/real_time"; not in
/// the latency table). Computed here from manual time, because Google Benchmark 1.7.1's
/// Counter::kIsRate divides by CPU time.
const std::vector<CounterSpec>& rate_counters();

/// Sets every applicable counter of rate_counters() on `state` (nothing when seconds <= 0).
void set_rate_counters(benchmark::State& state, const LoopFigures& figures);

}  // namespace tunebench
