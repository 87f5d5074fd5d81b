#include "tune/autotuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/plural.hpp"
#include "tune/sweep_strategy.hpp"
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

std::vector<Config> in_config_order(const Op& op, SpaceKind space, std::vector<Config> configs) {
  const auto first = op.config_space(space);
  const auto second = op.config_space(space == SpaceKind::kDefault ? SpaceKind::kExpanded : SpaceKind::kDefault);
  const auto rank = [&](const Config& c) -> std::size_t {
    if (const auto it = std::find(first.begin(), first.end(), c); it != first.end()) return it - first.begin();
    if (const auto it = std::find(second.begin(), second.end(), c); it != second.end()) {
      return first.size() + (it - second.begin());
    }
    return first.size() + second.size();
  };
  std::stable_sort(configs.begin(), configs.end(), [&](const Config& a, const Config& b) { return rank(a) < rank(b); });
  configs.erase(std::unique(configs.begin(), configs.end()), configs.end());
  return configs;
}

TuneOutcome autotune(const Op& op, const Shape& shape, const DeviceInfo& device, const RunTimer& time_run,
                     const TuneOptions& options, const std::vector<Measurement>& known,
                     const std::string& device_uuid) {
  TuneOutcome out;
  std::vector<Config> order;
  std::vector<Config> candidates;
  const auto space =
      options.only.empty() ? op.config_space(options.space) : in_config_order(op, options.space, options.only);
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
    const auto stored =
        std::find_if(known.begin(), known.end(), [&](const Measurement& m) { return m.config == text; });
    // A pruned row is not a verdict on the config: a sweep of the key again prunes it again, or not.
    if (stored != known.end() && stored->status != Status::kOk && stored->status != Status::kPruned) {
      ++out.reused_failures;
      continue;
    }
    order.push_back(config);
  }
  const int threads = options.compile_threads > 0 ? options.compile_threads
                                                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto compile_started = std::chrono::steady_clock::now();
  if (options.precompile) {
    if (options.on_progress)
      options.on_progress("precompiling " + count_of(static_cast<long long>(order.size()), "config", "configs"), true);
    try {
      op.precompile(order, device, threads);
    } catch (const std::exception&) {
      // Each config's own run reports what went wrong.
    }
  }
  out.stats.compile_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - compile_started).count();
  static const FullSweep full;
  const SweepStrategy& strategy = options.strategy ? *options.strategy : full;
  strategy.sweep(order, time_run, options, device_uuid, out);
  return out;
}

}  // namespace tunebench
