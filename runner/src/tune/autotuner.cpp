#include "tune/autotuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "tunebench/cuda.hpp"
#include "tunebench/nvrtc.hpp"

namespace tunebench {

using cache::Measurement;
using cache::Status;

std::int64_t quantile(std::vector<std::int64_t> samples, double q) {
  std::sort(samples.begin(), samples.end());
  const auto i = static_cast<std::size_t>(std::lround(q * static_cast<double>(samples.size() - 1)));
  return samples[std::min(i, samples.size() - 1)];
}

namespace {

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

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

}  // namespace

TuneOutcome autotune(const Op& op, const Shape& shape, const DeviceInfo& device, const RunTimer& time_run,
                     const TuneOptions& options, const std::vector<Measurement>& known,
                     const std::string& device_uuid) {
  TuneOutcome out;
  std::vector<Config> order;
  std::vector<Config> candidates;
  const auto space = options.only.empty() ? op.config_space(options.space) : options.only;
  for (const auto& config : space) {
    if (op.can_implement(config, shape, device)) candidates.push_back(config);
  }
  if (candidates.size() == 1) {
    // Nothing to choose between: not timed (p50 0 in the cache means "not measured").
    out.best = candidates[0];
    out.rejected = static_cast<int>(space.size()) - 1;
    return out;
  }
  for (const auto& config : space) {
    if (!op.can_implement(config, shape, device)) {
      ++out.rejected;
      continue;
    }
    const std::string text = config.str();
    const auto stored = std::find_if(known.begin(), known.end(), [&](const Measurement& m) { return m.config == text; });
    if (stored != known.end() && stored->status != Status::kOk) {
      ++out.reused_failures;
      continue;
    }
    order.push_back(config);
  }
  const int threads = options.compile_threads > 0 ? options.compile_threads
                                                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.on_progress) options.on_progress("precompiling " + std::to_string(order.size()) + " configs", true);
  try {
    op.precompile(order, device, threads);
  } catch (const std::exception&) {
    // Each config's own run reports what went wrong.
  }
  for (const auto& config : order) {
    const std::string text = config.str();
    if (options.on_progress) options.on_progress(text, false);
    try {
      out.results.push_back(time_config(config, time_run, options, device_uuid));
    } catch (const CudaError& e) {
      out.results.push_back({text, Status::kLaunchFailed, std::nullopt, std::nullopt, std::nullopt,
                             one_line(e.what()), 0, device_uuid});
      out.fatal_error = one_line(e.what());
      return out;
    }
  }
  std::int64_t fastest = 0;
  for (const auto& m : out.results) {
    if (m.status == Status::kOk && (fastest == 0 || *m.p50_ns < fastest)) fastest = *m.p50_ns;
  }
  if (fastest == 0) return out;
  const double limit = static_cast<double>(fastest) * (1.0 + options.tie_tolerance);
  for (std::size_t i = 0; i < out.results.size(); ++i) {
    const auto& m = out.results[i];
    if (m.status == Status::kOk && static_cast<double>(*m.p50_ns) <= limit) {
      out.best = order[i];
      out.best_p50_ns = *m.p50_ns;
      break;
    }
  }
  return out;
}

}  // namespace tunebench
