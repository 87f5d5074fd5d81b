// FullSweep, and the timing of one config that every strategy shares.

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "tune/sweep_strategy.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/nvrtc.hpp"

namespace tunebench {

using cache::Measurement;
using cache::Status;

namespace {

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

Measurement time_config(const Config& config, const RunTimer& time_run, const TuneOptions& o,
                        const std::string& device_uuid) {
  Measurement m;
  m.config = config.str();
  m.device_uuid = device_uuid;
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  auto over_time = [&] { return clock::now() - started > o.timeout_per_config; };
  try {
    std::chrono::nanoseconds first{0};
    for (int i = 0; i < o.warmup; ++i) {
      first = time_run(config);
      if (over_time()) {
        m.status = Status::kTimeout;
        m.error = "warmup exceeded the per-config timeout";
        return m;
      }
    }
    std::vector<std::int64_t> samples;
    int reps = o.max_repetitions;
    while (static_cast<int>(samples.size()) < reps) {
      const auto t = time_run(config);
      if (t.count() <= 0) throw std::runtime_error("timer reported a zero time");
      samples.push_back(t.count());
      if (samples.size() == 1) {
        // As many repetitions as fit the budget, judged from the first timed run.
        const auto fit = o.budget_per_config.count() / std::max<std::int64_t>(1, t.count());
        reps = static_cast<int>(std::clamp<std::int64_t>(fit, o.min_repetitions, o.max_repetitions));
      }
      if (over_time()) {
        m.status = Status::kTimeout;
        m.error = "exceeded the per-config timeout after " + std::to_string(samples.size()) + " runs";
        return m;
      }
    }
    (void)first;
    m.status = Status::kOk;
    m.p20_ns = quantile(samples, 0.2);
    m.p50_ns = quantile(samples, 0.5);
    m.p80_ns = quantile(samples, 0.8);
  } catch (const CudaError& e) {
    m.status = Status::kLaunchFailed;
    m.error = one_line(e.what());
    if (e.sticky()) throw;
  } catch (const CompileError& e) {
    m.status = Status::kCompileFailed;
    m.error = one_line(e.what());
  } catch (const std::exception& e) {
    m.status = Status::kLaunchFailed;
    m.error = one_line(e.what());
  }
  return m;
}

void pick_winner(const std::vector<Config>& order, const TuneOptions& options, TuneOutcome& out) {
  std::int64_t fastest = 0;
  for (const auto& m : out.results) {
    if (m.status == Status::kOk && (fastest == 0 || *m.p50_ns < fastest)) fastest = *m.p50_ns;
  }
  if (fastest == 0) return;
  const double limit = static_cast<double>(fastest) * (1.0 + options.tie_tolerance);
  for (std::size_t i = 0; i < out.results.size() && i < order.size(); ++i) {
    const auto& m = out.results[i];
    if (m.status == Status::kOk && static_cast<double>(*m.p50_ns) <= limit) {
      out.best = order[i];
      out.best_p50_ns = *m.p50_ns;
      return;
    }
  }
}

void FullSweep::sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
                      const std::string& device_uuid, TuneOutcome& out) const {
  for (const auto& config : order) {
    const std::string text = config.str();
    if (options.on_progress) options.on_progress(text, false);
    try {
      out.results.push_back(time_config(config, time_run, options, device_uuid));
    } catch (const CudaError& e) {
      out.results.push_back({text, Status::kLaunchFailed, std::nullopt, std::nullopt, std::nullopt,
                             one_line(e.what()), 0, device_uuid});
      out.fatal_error = one_line(e.what());
      return;
    }
  }
  pick_winner(order, options, out);
}

}  // namespace tunebench
