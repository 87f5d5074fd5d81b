#include "report/counters.hpp"

#include <algorithm>

namespace tunebench {

const std::vector<CounterSpec>& rate_counters() {
  static const std::vector<CounterSpec> counters = {
      {"TFLOP/s", "%.3g",
       [](const LoopFigures& f) -> std::optional<double> { return f.flops * f.iterations / f.seconds / 1e12; }},
      {"GB/s", "%.4g",
       [](const LoopFigures& f) -> std::optional<double> { return f.bytes * f.iterations / f.seconds / 1e9; }},
      {"roofline%", "%.1f",
       [](const LoopFigures& f) -> std::optional<double> {
         if (!f.gpu || !(f.peak_bytes_per_s > 0) || !(f.peak_flops > 0)) return std::nullopt;
         const double floor_s = std::max(f.flops / f.peak_flops, f.bytes / f.peak_bytes_per_s);
         return 100.0 * floor_s * f.iterations / f.seconds;
       }},
      // Plain counters, not kIsRate: that flag would divide by CPU time again.
      {"bytes_per_second", "%.4g",
       [](const LoopFigures& f) -> std::optional<double> { return f.bytes * f.iterations / f.seconds; }, false},
      {"items_per_second", "%.4g",
       [](const LoopFigures& f) -> std::optional<double> { return f.flops * f.iterations / f.seconds; }, false}};
  return counters;
}

void set_rate_counters(benchmark::State& state, const LoopFigures& figures) {
  if (!(figures.seconds > 0)) return;
  for (const auto& c : rate_counters()) {
    if (const auto v = c.value(figures)) state.counters[c.name] = *v;
  }
}

}  // namespace tunebench
