#include "sweep/shard_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "common/plural.hpp"

namespace tunebench {
namespace {

// CUDA stops enumerating CUDA_VISIBLE_DEVICES at its first invalid entry; -1 (any negative
// integer) is the one that is invalid everywhere, and "-1" alone is the usual "no GPU".
bool hides_the_rest(const std::string& token) {
  return token.size() > 1 && token[0] == '-' && token.find_first_not_of("0123456789", 1) == std::string::npos;
}

bool has_hiding_entry(const std::string& visible) {
  std::size_t pos = 0;
  while (pos <= visible.size()) {
    const auto comma = std::min(visible.find(',', pos), visible.size());
    std::string token = visible.substr(pos, comma - pos);
    token.erase(0, token.find_first_not_of(' '));
    token.erase(token.find_last_not_of(' ') + 1);
    if (hides_the_rest(token)) return true;
    pos = comma + 1;
  }
  return false;
}

}  // namespace

std::vector<std::string> device_tokens(const char* visible, int device_count) {
  std::vector<std::string> tokens;
  if (!visible) {
    for (int i = 0; i < device_count; ++i) tokens.push_back(std::to_string(i));
    return tokens;
  }
  const std::string s(visible);
  std::size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    const auto comma = std::min(s.find(',', pos), s.size());
    std::string token = s.substr(pos, comma - pos);
    token.erase(0, token.find_first_not_of(' '));
    token.erase(token.find_last_not_of(' ') + 1);
    if (token.empty()) {
      throw std::invalid_argument("CUDA_VISIBLE_DEVICES='" + s + "': empty entry (expected comma-separated devices)");
    }
    if (hides_the_rest(token)) break;
    tokens.push_back(token);
    pos = comma + 1;
  }
  return tokens;
}

std::vector<std::string> shard_devices(const std::vector<std::string>& tokens, int n, const char* visible) {
  if (n > static_cast<int>(tokens.size())) {
    const std::string asked = "PARALLEL_WARMUP_GPUS=" + std::to_string(n) + " but ";
    const bool hidden = visible && has_hiding_entry(visible);
    const std::string why = hidden ? ": CUDA enumerates no device from its first negative entry on" : "";
    if (tokens.empty()) {
      throw std::invalid_argument(asked + "no CUDA device is visible (CUDA_VISIBLE_DEVICES is " +
                                  (!visible ? "unset, and no device was found"
                                   : hidden ? "'" + std::string(visible) + "'" + why
                                            : std::string("empty")) +
                                  "): expected at least " + std::to_string(n) + " GPUs to shard the sweep over");
    }
    throw std::invalid_argument(
        asked + "only " + count_of(static_cast<long long>(tokens.size()), "device is", "devices are") + " visible (" +
        (visible ? "CUDA_VISIBLE_DEVICES=" + std::string(visible) + why
                 : std::string("CUDA_VISIBLE_DEVICES is unset: every device found")) +
        ")");
  }
  const std::vector<std::string> devices(tokens.begin(), tokens.begin() + std::max(0, n));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        throw std::invalid_argument("CUDA_VISIBLE_DEVICES lists '" + devices[i] +
                                    "' twice: two shards would share one GPU");
      }
    }
  }
  return devices;
}

double sweep_cost_s(double flops, double bytes, int configs, const TuneOptions& options, double peak_flops,
                    double peak_bytes_per_s, double per_run_s, double per_config_s) {
  const double run = std::max(flops / peak_flops, bytes / peak_bytes_per_s) + per_run_s;
  const double budget = std::chrono::duration<double>(options.budget_per_config).count();
  const double reps = std::clamp(std::floor(budget / run), static_cast<double>(options.min_repetitions),
                                 static_cast<double>(options.max_repetitions));
  return std::max(1, configs) * ((options.warmup + reps) * run + per_config_s);
}

ShardPlan plan_shards(const std::vector<double>& costs, int n, double trust_share) {
  ShardPlan plan;
  plan.shards.resize(static_cast<std::size_t>(std::max(1, n)));
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(plan.shards.size(), 0.0);
  std::vector<std::size_t> first(costs.size());
  for (auto k : order) {
    const auto s = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    plan.shards[s].push_back(k);
    load[s] += costs[k];
    first[k] = s;
  }
  if (n < 2 || costs.empty() || trust_share <= 0) return plan;
  const auto doubled = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(trust_share * costs.size())));
  // From the cheaper half, spread over it deterministically: a doubled key costs its sweep
  // twice, so doubling the costly keys would take the speedup of N shards well below N (10% of
  // keys spread over the whole range cost ~10% more sweep). Cheap keys are the short kernels,
  // where timing noise is largest, so the disagreement count stays a conservative figure.
  const std::size_t half = order.size() / 2;
  const std::size_t pool = order.size() - half;  // the cheaper half, and the middle key when odd
  const double step = static_cast<double>(pool) / static_cast<double>(std::min(doubled, pool));
  for (std::size_t i = 0; i < doubled && i < pool; ++i) {
    const auto k = order[half + static_cast<std::size_t>(static_cast<double>(i) * step)];
    std::size_t best = first[k] == 0 ? 1 : 0;
    for (std::size_t s = 0; s < load.size(); ++s) {
      if (s != first[k] && load[s] < load[best]) best = s;
    }
    plan.shards[best].push_back(k);
    load[best] += costs[k];
    plan.doubled.push_back(k);
  }
  return plan;
}

void order_for_pruning(ShardPlan& plan, const std::vector<std::string>& group, const std::vector<std::int64_t>& m) {
  for (auto& shard : plan.shards) {
    std::map<std::string, std::vector<std::size_t>> positions;  // of each group, past the first
    for (std::size_t p = 1; p < shard.size(); ++p) positions[group[shard[p]]].push_back(p);
    for (const auto& [name, at] : positions) {
      std::vector<std::size_t> keys;
      for (const auto p : at) keys.push_back(shard[p]);
      std::stable_sort(keys.begin(), keys.end(), [&](std::size_t a, std::size_t b) { return m[a] < m[b]; });
      for (std::size_t i = 0; i < at.size(); ++i) shard[at[i]] = keys[i];
    }
  }
}

std::size_t ready_key(const std::vector<std::size_t>& left, const std::vector<std::string>& group,
                      const std::function<bool(std::size_t)>& ready) {
  std::set<std::string> passed;  // groups of the keys before the one looked at
  for (std::size_t p = 0; p < left.size(); ++p) {
    const std::string& g = group.at(left[p]);
    if (passed.insert(g).second && ready(left[p])) return p;
  }
  return 0;
}

std::vector<std::size_t> reach_order(const ShardPlan& plan, const std::vector<double>& costs) {
  std::vector<double> start(costs.size(), std::numeric_limits<double>::infinity());
  for (const auto& shard : plan.shards) {
    double t = 0;
    for (const auto k : shard) {
      start[k] = std::min(start[k], t);
      t += costs[k];
    }
  }
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < costs.size(); ++k) {
    if (start[k] < std::numeric_limits<double>::infinity()) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return start[a] != start[b] ? start[a] < start[b] : costs[a] > costs[b];
  });
  return order;
}

}  // namespace tunebench
