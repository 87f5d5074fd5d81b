// The body of every registered benchmark: prepare once, choose the config, time, set counters.

#include "run/benchmark_body.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <mutex>

#include "common/c_numbers.hpp"
#include "common/one_line.hpp"
#include "context/config_choice.hpp"
#include "cuda/gpu_clock.hpp"
#include "report/counters.hpp"
#include "timing/iteration_sizing.hpp"
#include "timing/op_timing.hpp"

namespace tunebench {
namespace {

// The measurement device's SM clock, for GPU runs (nothing when NVML cannot say).
SmClock sm_clock(const RunContext& context) {
  if (!context.gpu_available || context.device.ordinal < 0) return {};
  return read_sm_clock(context.device.ordinal);
}

// The config `family` is timed with and where it came from: chosen (replayed, cached or tuned
// now), and a replayed config that cannot run, or fails its warm-up run, replaced by a live-tuned
// one (replay_fallback).
std::pair<Config, ConfigSource> settle_config(const Family& family, const RunContext& context, ChoiceLog& choices,
                                              OpTiming& timing, LoopTuning& tuning) {
  std::pair<Config, ConfigSource> chosen;
  // A key the cache cannot answer is tuned here, and so is a replayed config's that cannot run:
  // their runs and wall time are the loop's tuning.
  const RunTimer inner = timing.run_timer();
  const RunTimer counted = [&inner, &tuning](const std::vector<Config>& runs) {
    auto times = inner(runs);
    for (const auto ns : times) tuning.kernel_seconds += std::chrono::duration<double>(ns).count();
    tuning.runs += static_cast<long long>(times.size());
    return times;
  };
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  const auto tune_live = [&](const std::string& bad, const std::string& what) -> std::pair<Config, ConfigSource> {
    const auto started = std::chrono::steady_clock::now();
    Config config = replay_fallback(family, context, choices, timing, bad, what, &counted);
    tuning.seconds += since(started);
    return {std::move(config), ConfigSource::kTuned};
  };
  try {
    const auto started = std::chrono::steady_clock::now();
    chosen = choose_config(family, context, choices, counted, nullptr, nullptr, timing.variants());
    if (chosen.second == ConfigSource::kTuned) tuning.seconds += since(started);
  } catch (const UnrunnableReplay& e) {
    return tune_live(e.config, e.what());
  }
  if (chosen.second != ConfigSource::kReplayed) return chosen;
  const auto fall_back = [&](const std::exception& e) {
    return tune_live(chosen.first.str(), "failed (" + std::string(e.what()) + ")");
  };
  try {
    timing.warm(chosen.first);
  } catch (const CudaError& e) {
    if (e.sticky()) throw;
    return fall_back(e);
  } catch (const std::exception& e) {
    return fall_back(e);
  }
  return chosen;
}

// Prepares `family` into `loop.last` (freeing the previous benchmark's workload first: device
// memory), settles its config and records it.
void prepare(const Family& family, const RunContext& context, TimingLoopState& loop) {
  LastBenchmark& last = loop.last;
  last.timing.reset();
  last.name.clear();
  auto timing = std::make_unique<OpTiming>(*family.op, family.shape, context.seed, timing_options(context),
                                           timing_faults(context));
  const auto [config, source] = settle_config(family, context, *loop.choices, *timing, loop.tuning);
  const Op& op = *family.op;
  if (loop.record) {
    loop.record->add({family.name, op.name(), op.kernel_version(), op.tuning_key(family.shape),
                      op.needs_gpu() ? context.device.name : context.host_name, config.str(), source});
  }
  // The label names the timing of GPU ops, so two results are never mistaken for one kind.
  last.label = op.needs_gpu() ? config.str() + " (" + timing_name(timing->options()) + ")" : config.str();
  last.config = config;
  last.timing = std::move(timing);
  last.name = family.name;
}

void run_timed(benchmark::State& state, const Family& family, const RunContext& context, TimingLoopState& loop) {
  if (family.op->needs_gpu() && !context.gpu_available) {
    state.SkipWithError(("no CUDA device: " + context.gpu_reason).c_str());
    return;
  }
  const auto started = std::chrono::steady_clock::now();
  LastBenchmark& last = loop.last;
  std::lock_guard<std::mutex> lock(last.mutex);
  double measured_s = 0, runs = 0, prepare_s = 0, setup_s = 0;
  struct Account {  // the call's wall time counts also when the op throws
    TimingLoopState& loop;
    const std::string& name;
    std::chrono::steady_clock::time_point started;
    double& prepare_s;
    double& setup_s;
    double& measured_s;
    double& runs;
    ~Account() {
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      loop.stats.add(name, wall, prepare_s, setup_s, measured_s, runs);
    }
  } account{loop, family.name, started, prepare_s, setup_s, measured_s, runs};
  if (last.name != family.name) {
    prepare(family, context, loop);
    prepare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  state.SetLabel(last.label);
  const SmClock clock_start = sm_clock(context);
  const double setup_before = last.timing->setup_seconds();
  const auto total = last.timing->measure(state, last.config);
  setup_s = last.timing->setup_seconds() - setup_before;
  if (const std::string& why = last.timing->batch_refused();
      !why.empty() && loop.eager_ops.insert(family.op->name()).second) {
    std::cerr << ("bench: " + family.op->name() + "'s runs cannot be captured into a CUDA graph (" +
                  escape_controls(why) + "): its benchmarks are timed with one launch per iteration\n");
  }
  if (total) {
    measured_s = total->seconds;
    runs = total->iterations;
    if (loop.stats.sized_iterations.count(family.name)) {
      const double min_time = gbench_min_time();
      if (total->seconds < min_time) {
        auto [it, added] = loop.stats.short_of_min_time.emplace(family.name, total->seconds);
        if (!added) it->second = std::min(it->second, total->seconds);
      } else if (total->iterations > 1 && total->seconds > TimingStageStats::kOverrunFactor * min_time) {
        // One iteration is the least a call can run: a run longer than 4 x min_time is no sign
        // of a stale stored time.
        auto [it, added] = loop.stats.over_min_time.emplace(family.name, total->seconds);
        if (!added) it->second = std::max(it->second, total->seconds);
      }
    }
    const RooflinePeaks peaks = family.op->roofline_peaks(context.device);
    set_rate_counters(state, {family.op->flops(family.shape), family.op->bytes(family.shape), total->iterations,
                              total->seconds, family.op->needs_gpu(), peaks.flops, peaks.bytes_per_s});
    const SmClock clock_end = sm_clock(context);
    if (clock_start.mhz && clock_end.mhz) {
      state.counters["sm_mhz_start"] = *clock_start.mhz;
      state.counters["sm_mhz_end"] = *clock_end.mhz;
    }
  }
}

}  // namespace
void register_family(const Family& family, std::shared_ptr<const RunContext> context,
                     std::shared_ptr<TimingLoopState> loop, std::optional<benchmark::IterationCount> iterations) {
  auto* b = benchmark::RegisterBenchmark(family.name.c_str(), [family, context, loop](benchmark::State& state) {
    try {
      run_timed(state, family, *context, *loop);
    } catch (const std::bad_alloc&) {
      // Its what() ("std::bad_alloc") says neither which shape nor which memory.
      const Shape& s = family.shape;
      state.SkipWithError(("out of host memory for the workload of M=" + std::to_string(s.m) +
                           " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) +
                           " (its inputs, weights and references are made on the host)")
                              .c_str());
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
    }
    // The op's prepare() may have set the locale: Google Benchmark
    // reports next.
    use_c_numbers();
  });
  b->UseManualTime()->Unit(family.op->time_unit());
  if (iterations) b->Iterations(*iterations);
}

}  // namespace tunebench
