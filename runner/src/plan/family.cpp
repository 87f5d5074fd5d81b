#include "plan/family.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <cmath>
#include <exception>
#include <set>
#include <stdexcept>

#include "cuda/gpu_clock.hpp"
#include "timing/op_timing.hpp"

namespace tunebench {

std::string family_name(const Op& op, const Shape& shape) {
  std::string name = op.name() + "/" + shape.set + "/M:" + std::to_string(shape.m) +
                     "/N:" + std::to_string(shape.n) + "/K:" + std::to_string(shape.k);
  if (op.routed()) {
    name += "/E:" + std::to_string(shape.experts) + "/topk:" + std::to_string(shape.top_k);
  }
  return name;
}

std::string reported_name(const Family& family) { return family.name + "/manual_time"; }

std::pair<double, double> roofline_peaks(const std::string& device_name) {
  if (device_name.find("H200") != std::string::npos) return {4243e9, 790e12};
  return {0, 0};
}

cache::Key cache_key(const Op& op, const Shape& shape, const RunContext& context) {
  if (!op.needs_gpu()) {
    return {op.name(), op.kernel_version(), op.tuning_key(shape), context.host_name, "", "host", "host"};
  }
  return {op.name(),
          op.kernel_version(),
          op.tuning_key(shape),
          context.device.name,
          std::to_string(context.device.cc_major) + "." + std::to_string(context.device.cc_minor),
          context.cuda_toolkit,
          timing_name({context.timing_mode, context.cold_l2})};
}

std::vector<Family> make_families(const OpList& ops, const std::vector<ShapeSet>& sets) {
  std::vector<Family> families;
  std::set<std::string> names;
  for (const auto& op : ops) {
    ShapeRules rules = op->shape_rules();
    rules.needs_moe = rules.needs_moe || op->routed();  // its names print E and topk
    for (const auto& set : sets) {
      if (!check_shape_rules(set, rules)) continue;
      for (const auto& shape : set.shapes) {
        Family f{family_name(*op, shape), op, shape};
        if (!names.insert(f.name).second) {
          throw std::invalid_argument("benchmark name '" + f.name + "' is registered twice");
        }
        families.push_back(std::move(f));
      }
    }
  }
  return families;
}

namespace {

// `text` as a config `family` can run: one of its op's default or expanded space that
// can_implement accepts for the shape. Configs from outside this process (an imported or stale
// cache row, an edited configs.json) may be neither, and an op given a config it never offered
// may fail in any way, a crash included, so nothing else is ever run. Otherwise nullopt, and
// *why says what is wrong.
std::optional<Config> runnable_config(const Family& family, const std::string& text, const RunContext& context,
                                      std::string* why) {
  const Op& op = *family.op;
  std::optional<Config> config;
  try {
    config = Config::parse(text);
  } catch (const ConfigError& e) {
    *why = e.what();
    return std::nullopt;
  }
  const auto in_space = [&](SpaceKind kind) {
    const auto space = op.config_space(kind);
    return std::find(space.begin(), space.end(), *config) != space.end();
  };
  if (!in_space(SpaceKind::kDefault) && !in_space(SpaceKind::kExpanded)) {
    *why = "not in " + op.name() + "'s config space";
    return std::nullopt;
  }
  if (!op.can_implement(*config, family.shape, context.device)) {
    *why = op.name() + " cannot run it on this shape";
    return std::nullopt;
  }
  return config;
}

}  // namespace

std::optional<Config> cached_config(const Family& family, const RunContext& context, std::string* unusable) {
  if (!context.cache) return std::nullopt;
  const Op& op = *family.op;
  const cache::Key key = cache_key(op, family.shape, context);
  const auto best = context.cache->best(key);
  if (!best) return std::nullopt;
  std::string why;
  const std::optional<Config> config = runnable_config(family, best->config, context, &why);
  if (!config) {
    if (unusable) *unusable = "cached config '" + best->config + "' of " + family.name + " is not one this op can run";
    return std::nullopt;
  }
  if (context.tune.space == SpaceKind::kExpanded) {
    // An exhaustive search (USE_FLAGTUNE=1) is answered only once every config of the expanded
    // space that fits has a measurement for this key: a best from the default space is not.
    std::set<std::string> measured;
    for (const auto& m : context.cache->measurements(key)) measured.insert(m.config);
    for (const auto& c : op.config_space(SpaceKind::kExpanded)) {
      if (!measured.count(c.str()) && c.str() != best->config && op.can_implement(c, family.shape, context.device)) {
        return std::nullopt;
      }
    }
  }
  return config;
}

namespace {

void set_rates(benchmark::State& state, const Family& family, const RunContext& context, double iterations,
               double total_s) {
  if (!(total_s > 0)) return;
  // Counter::kIsRate divides by CPU time, not manual time, so the rates are computed here.
  state.counters["TFLOP/s"] = family.op->flops(family.shape) * iterations / total_s / 1e12;
  state.counters["GB/s"] = family.op->bytes(family.shape) * iterations / total_s / 1e9;
  const RunContext* c = &context;
  if (family.op->needs_gpu() && c->peak_bytes_per_s > 0 && c->peak_flops > 0) {
    // The time the roofline allows (the larger of the compute and the memory floor) over the
    // time measured.
    const double floor_s = std::max(family.op->flops(family.shape) / c->peak_flops,
                                    family.op->bytes(family.shape) / c->peak_bytes_per_s);
    state.counters["roofline%"] = 100.0 * floor_s * iterations / total_s;
  }
}

// A replayed config the op cannot run (runnable_config): it is never run, the key is tuned live.
struct UnrunnableReplay : std::runtime_error {
  UnrunnableReplay(std::string config_text, const std::string& why)
      : std::runtime_error(why), config(std::move(config_text)) {}
  std::string config;
};

// The replayed config, else the cached best config of the family's key, else the winner of a
// sweep that is stored; and where it came from. Throws UnrunnableReplay for a replayed config
// the op cannot run.
std::pair<Config, ConfigSource> choose_config(const Family& family, const RunContext& context,
                                              const RunTimer& time_run, const TuneOptions* options = nullptr) {
  const Op& op = *family.op;
  if (!context.replay.empty() && !options) {
    {
      std::lock_guard<std::mutex> lock(context.fallbacks->mutex);
      const auto fb = context.fallbacks->config_of.find(family.name);
      if (fb != context.fallbacks->config_of.end()) return {fb->second, ConfigSource::kTuned};
    }
    const auto it = context.replay.find(family.name);
    if (it != context.replay.end()) {
      std::string why;
      auto config = runnable_config(family, it->second.config, context, &why);
      if (!config) throw UnrunnableReplay(it->second.config, "is not one this op can run (" + why + ")");
      return {std::move(*config), ConfigSource::kReplayed};
    }
  }
  const cache::Key key = cache_key(op, family.shape, context);
  if (!options) {
    std::string unusable;
    if (auto cached = cached_config(family, context, &unusable)) {
      return {std::move(*cached), context.swept.count(family.name) ? ConfigSource::kTuned : ConfigSource::kCache};
    }
    if (!unusable.empty()) std::cerr << "bench: " << unusable << "; tuning again\n";
  }
  if (context.cache && context.cache->read_only()) {
    // Refused before the sweep: its result could not be stored, so it would be lost at the end.
    throw std::runtime_error("config cache " + context.cache->path().string() + " is read-only: " + op.name() + " " +
                             key.tuning_key + " is not in it and cannot be tuned and stored; point TUNEBENCH_CACHE " +
                             "or --tunebench_cache at a writable file");
  }
  std::vector<cache::Measurement> known;
  if (context.cache && !options) known = context.cache->measurements(key);
  const std::string uuid = op.needs_gpu() ? context.device.uuid : "";
  const TuneOutcome outcome =
      autotune(op, family.shape, context.device, time_run, options ? *options : context.tune, known, uuid);
  if (!outcome.fatal_error.empty()) {
    // Keep what was learnt, the failing config above all, so no later run tries it again.
    if (context.cache) context.cache->store(key, outcome.results, std::nullopt);
    throw StickyCudaError("sticky CUDA error while tuning, the process cannot continue on this GPU: " +
                          outcome.fatal_error);
  }
  std::optional<cache::Best> best;
  if (outcome.found()) best = cache::Best{outcome.best.str(), outcome.best_p50_ns, 0};
  if (context.cache) context.cache->store(key, outcome.results, best);
  if (!outcome.found()) {
    std::string why = "no config ran";
    for (const auto& m : outcome.results) {
      if (m.status != cache::Status::kOk) {
        why += " (" + std::string(cache::to_string(m.status)) + " [" + m.config + "]: " + m.error + ")";
        break;
      }
    }
    if (outcome.results.empty()) {
      why += " (" + std::to_string(outcome.rejected) + " rejected by can_implement, " +
             std::to_string(outcome.reused_failures) + " failed in an earlier run)";
    }
    throw std::runtime_error(why);
  }
  return {outcome.best, ConfigSource::kTuned};
}

TimingOptions timing_options(const RunContext& context) { return {context.timing_mode, context.cold_l2}; }

// The measurement device's SM clock, for GPU runs (nothing when NVML cannot say).
SmClock sm_clock(const RunContext& context) {
  if (!context.gpu_available || context.device.ordinal < 0) return {};
  return read_sm_clock(context.device.ordinal);
}

// A replayed config that the op cannot run, or that no longer compiles or launches: evict it
// from the cache, then tune the key live without reading the cache, so a failed eviction cannot
// hand the bad config back.
// `what` says what is wrong with it ("failed (...)", say).
Config replay_fallback(const Family& family, const RunContext& context, OpTiming& timing, const std::string& bad,
                       const std::string& what) {
  const Op& op = *family.op;
  std::string marker = "compile_" + op.name() + "_evicted";
  std::string detail = "evicted from the cache";
  try {
    if (const char* f = std::getenv("TUNEBENCH_FAULT_INJECT"); f && std::string(f) == "evict-fails") {
      throw std::runtime_error("injected eviction failure");
    }
    if (context.cache) context.cache->erase(cache_key(op, family.shape, context), bad);
  } catch (const std::exception& e) {
    marker = "compile_" + op.name() + "_no_evict";
    detail = std::string("eviction failed: ") + e.what();
  }
  std::string one_line = what;
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  std::cerr << "bench: [" << marker << "] replayed config '" << bad << "' of " << family.name << " (from "
            << context.replay_source << ") " << one_line << "; " << detail << "; tuning the key live\n";
  TuneOptions live = context.tune;  // given options: neither replay nor the cache is read
  const Config config = choose_config(family, context, timing.run_timer(), &live).first;
  std::lock_guard<std::mutex> lock(context.fallbacks->mutex);
  context.fallbacks->config_of[family.name] = config;
  context.fallbacks->markers[marker].push_back(family.name);
  return config;
}

void run_timed(benchmark::State& state, const Family& family, const RunContext& context) {
  if (family.op->needs_gpu() && !context.gpu_available) {
    state.SkipWithError(("no CUDA device: " + context.gpu_reason).c_str());
    return;
  }
  auto& last = *context.last;
  std::lock_guard<std::mutex> lock(last.mutex);
  if (last.name != family.name) {
    // Free the previous benchmark's inputs before preparing these (device memory).
    last.timing.reset();
    last.name.clear();
    auto timing = std::make_unique<OpTiming>(*family.op, family.shape, context.seed, timing_options(context));
    auto [config, source] = [&]() -> std::pair<Config, ConfigSource> {
      try {
        return choose_config(family, context, timing->run_timer());
      } catch (const UnrunnableReplay& e) {
        return {replay_fallback(family, context, *timing, e.config, e.what()), ConfigSource::kTuned};
      }
    }();
    if (source == ConfigSource::kReplayed) {
      try {
        timing->warm(config);
      } catch (const CudaError& e) {
        if (e.sticky()) throw;
        config = replay_fallback(family, context, *timing, config.str(), "failed (" + std::string(e.what()) + ")");
        source = ConfigSource::kTuned;
      } catch (const std::exception& e) {
        config = replay_fallback(family, context, *timing, config.str(), "failed (" + std::string(e.what()) + ")");
        source = ConfigSource::kTuned;
      }
    }
    if (context.record) {
      const Op& op = *family.op;
      context.record->add({family.name, op.name(), op.kernel_version(), op.tuning_key(family.shape),
                           op.needs_gpu() ? context.device.name : context.host_name, config.str(), to_string(source)});
    }
    // The label names the timing of GPU ops, so two results are never mistaken for one kind.
    last.label = family.op->needs_gpu() ? config.str() + " (" + timing_name(timing->options()) + ")" : config.str();
    last.config = config;
    last.timing = std::move(timing);
    last.name = family.name;
  }
  state.SetLabel(last.label);
  const SmClock clock_start = sm_clock(context);
  if (const auto total = last.timing->measure(state, last.config)) {
    set_rates(state, family, context, total->iterations, total->seconds);
    const SmClock clock_end = sm_clock(context);
    if (clock_start.mhz && clock_end.mhz) {
      state.counters["sm_mhz_start"] = *clock_start.mhz;
      state.counters["sm_mhz_end"] = *clock_end.mhz;
    }
  }
}

}  // namespace

Config ensure_tuned(const Family& family, const RunContext& context, const TuneOptions* options) {
  OpTiming timing(*family.op, family.shape, context.seed, timing_options(context));
  return choose_config(family, context, timing.run_timer(), options).first;
}

void register_family(const Family& family, std::shared_ptr<const RunContext> context) {
  benchmark::RegisterBenchmark(family.name.c_str(),
                               [family, context](benchmark::State& state) {
                                 try {
                                   run_timed(state, family, *context);
                                 } catch (const std::exception& e) {
                                   state.SkipWithError(e.what());
                                 }
                               })
      ->UseManualTime()
      ->Unit(family.op->time_unit());
}

}  // namespace tunebench
