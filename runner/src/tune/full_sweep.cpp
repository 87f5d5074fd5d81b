// FullSweep, and what every strategy shares: batches, one config's measurement, the winner and
// the finalists.

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "common/plural.hpp"
#include "tune/sweep_strategy.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/nvrtc.hpp"

namespace tunebench {

using cache::Measurement;
using cache::Status;

std::string one_line_error(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message;
}

std::vector<std::chrono::nanoseconds> run_batch(const RunTimer& time_run, const std::vector<Config>& runs,
                                                SweepStats* stats) {
  auto times = time_run(runs);
  if (times.size() != runs.size()) {
    throw std::runtime_error("timer returned " + count_of(static_cast<long long>(times.size()), "time", "times") +
                             " for a batch of " + count_of(static_cast<long long>(runs.size()), "run", "runs"));
  }
  if (stats) {
    stats->runs += static_cast<std::int64_t>(times.size());
    for (const auto& t : times) stats->kernel_ns += t.count();
  }
  return times;
}

std::exception_ptr root_cause(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const BatchRunError& b) {
    return b.cause ? root_cause(b.cause) : e;
  } catch (...) {
    return e;
  }
}

bool record_failure(Measurement& m, std::exception_ptr e) {
  m.p20_ns = m.p50_ns = m.p80_ns = std::nullopt;
  try {
    std::rethrow_exception(root_cause(e));
  } catch (const CompileError& x) {
    m.status = Status::kCompileFailed;
    m.error = one_line_error(x.what());
  } catch (const CudaError& x) {
    m.status = Status::kLaunchFailed;
    m.error = one_line_error(x.what());
    return x.sticky();
  } catch (const std::exception& x) {
    m.status = Status::kLaunchFailed;
    m.error = one_line_error(x.what());
  } catch (...) {
    m.status = Status::kLaunchFailed;
    m.error = "unknown exception";
  }
  return false;
}

void set_quantiles(Measurement& m, const std::vector<std::int64_t>& samples) {
  m.status = Status::kOk;
  m.error.clear();
  m.p20_ns = quantile(samples, 0.2);
  m.p50_ns = quantile(samples, 0.5);
  m.p80_ns = quantile(samples, 0.8);
}

int full_repetitions(std::int64_t run_ns, const TuneOptions& o) {
  const auto fit = o.budget_per_config.count() / std::max<std::int64_t>(1, run_ns);
  return static_cast<int>(std::clamp<std::int64_t>(fit, o.min_repetitions, o.max_repetitions));
}

Measurement time_config(const Config& config, const RunTimer& time_run, const TuneOptions& o,
                        const std::string& device_uuid, SweepStats* stats) {
  Measurement m;
  m.config = config.str();
  m.device_uuid = device_uuid;
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  auto over_time = [&] { return clock::now() - started > o.timeout_per_config; };
  try {
    // The warmup runs and the first timed run, which says how many more fit the budget.
    const auto first =
        run_batch(time_run, std::vector<Config>(static_cast<std::size_t>(std::max(0, o.warmup)) + 1, config), stats);
    if (over_time()) {
      m.status = Status::kTimeout;
      m.error = "warmup exceeded the per-config timeout";
      return m;
    }
    const std::int64_t t = first.back().count();
    if (t <= 0) throw std::runtime_error("timer reported a zero time");
    std::vector<std::int64_t> samples{t};
    const int reps = full_repetitions(t, o);
    const int per_batch = static_cast<int>(std::clamp<std::int64_t>(kBatchNs / t, 1, reps));
    while (static_cast<int>(samples.size()) < reps) {
      const int n = std::min(per_batch, reps - static_cast<int>(samples.size()));
      for (const auto& r : run_batch(time_run, std::vector<Config>(static_cast<std::size_t>(n), config), stats)) {
        if (r.count() <= 0) throw std::runtime_error("timer reported a zero time");
        samples.push_back(r.count());
      }
      if (over_time()) {
        m.status = Status::kTimeout;
        m.error =
            "exceeded the per-config timeout after " + count_of(static_cast<long long>(samples.size()), "run", "runs");
        return m;
      }
    }
    set_quantiles(m, samples);
  } catch (...) {
    const auto cause = root_cause(std::current_exception());
    if (record_failure(m, cause)) std::rethrow_exception(cause);  // sticky: the sweep ends
  }
  return m;
}

std::optional<std::size_t> winner_index(const std::vector<Measurement>& results, double tie_tolerance) {
  std::int64_t fastest = 0;
  for (const auto& m : results) {
    if (m.status == Status::kOk && m.p50_ns && (fastest == 0 || *m.p50_ns < fastest)) fastest = *m.p50_ns;
  }
  if (fastest == 0) return std::nullopt;
  const double limit = static_cast<double>(fastest) * (1.0 + tie_tolerance);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& m = results[i];
    if (m.status == Status::kOk && m.p50_ns && static_cast<double>(*m.p50_ns) <= limit) return i;
  }
  return std::nullopt;
}

void pick_winner(const std::vector<Config>& order, const TuneOptions& options, TuneOutcome& out) {
  const auto i = winner_index(out.results, options.tie_tolerance);
  if (!i || *i >= order.size()) return;
  out.best = order[*i];
  out.best_p50_ns = *out.results[*i].p50_ns;
}

std::vector<Config> finalists_of(const std::vector<Config>& order, const std::vector<Measurement>& results,
                                 const TuneOptions& options) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < results.size() && i < order.size(); ++i) {
    if (results[i].status == Status::kOk && results[i].p50_ns) ok.push_back(i);
  }
  std::stable_sort(ok.begin(), ok.end(), [&](auto a, auto b) { return *results[a].p50_ns < *results[b].p50_ns; });
  std::vector<bool> chosen(order.size(), false);
  if (ok.empty()) return {};
  const auto& best = results[ok[0]];
  const double limit = static_cast<double>(best.p80_ns.value_or(*best.p50_ns)) * (1.0 + options.finalist_band);
  for (std::size_t r = 0; r < ok.size(); ++r) {
    const auto& m = results[ok[r]];
    if (static_cast<int>(r) < options.min_finalists || static_cast<double>(m.p20_ns.value_or(*m.p50_ns)) <= limit) {
      chosen[ok[r]] = true;
    }
  }
  std::vector<Config> out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (chosen[i]) out.push_back(order[i]);
  }
  return out;
}

void FullSweep::sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& options,
                      const std::string& device_uuid, TuneOutcome& out) const {
  for (const auto& config : order) {
    const std::string text = config.str();
    if (options.on_progress) options.on_progress(text, false);
    try {
      out.results.push_back(time_config(config, time_run, options, device_uuid, &out.stats));
    } catch (const CudaError& e) {
      out.results.push_back({text, Status::kLaunchFailed, std::nullopt, std::nullopt, std::nullopt,
                             one_line_error(e.what()), 0, device_uuid, ""});
      out.fatal_error = one_line_error(e.what());
      return;
    }
  }
  pick_winner(order, options, out);
  if (out.found()) out.stats.finalists = finalists_of(order, out.results, options);
}

std::shared_ptr<const SweepStrategy> make_full_sweep() { return std::make_shared<FullSweep>(); }

}  // namespace tunebench
