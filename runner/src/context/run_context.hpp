#pragma once
// The run's facts: what the sweep, the config choice, the benchmark body and the reports read
// besides a family. Made by make_context (context_setup.hpp) after the plan, and completed by the
// sweep stage (which fills `swept`) before anything is registered; const after that. What
// changes during the run lives with the stage that writes it: the config choice's ChoiceLog
// (config_choice.hpp), the benchmark body's TimingLoopState (run/benchmark_body.hpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "context/run_record.hpp"
#include "settings/settings.hpp"
#include "timing/timing_mode.hpp"
#include "tune/autotuner.hpp"
#include "tunebench/cache/config_cache.hpp"
#include "tunebench/device.hpp"

namespace tunebench {

/// The run's facts (see the top of this file).
struct RunContext {
  bool gpu_available = false;  ///< a CUDA device can be used
  std::string gpu_reason;      ///< why not, when !gpu_available (one line)
  std::uint64_t seed = 0;      ///< input seed, the same for every benchmark of a run
  /// The measurement device (ordinal 0), or sm90_reference_device() when there is none.
  DeviceInfo device = sm90_reference_device();
  /// Where tuned configs are kept; null tunes every benchmark afresh and keeps nothing.
  std::shared_ptr<cache::ConfigCache> cache;
  TuneOptions tune;          ///< how a key that is not cached gets tuned
  std::string host_name;     ///< the CPU model, the "device" of host ops' cache keys
  std::string cuda_toolkit;  ///< "cuda <major>.<minor>" of the runtime, for GPU ops' keys
  /// How GPU ops are timed (TimingOptions::mode); kEvent is also the fallback when CUPTI cannot
  /// be used.
  TimingMode timing_mode = TimingMode::kKernel;
  /// Flush L2 before every timed run (TimingOptions::cold_l2); part of the cache key's timing.
  bool cold_l2 = false;
  /// The run selects a GPU op and has a device to time it on. False: every benchmark it runs is
  /// a host op, host-timed whatever timing_mode says, and the run's timing is "host"
  /// (run_timing_name).
  bool times_gpu_ops = false;
  /// How Google Benchmark's loop launches GPU runs (TimingOptions::loop); not part of any key.
  TimingLoop timing_loop = TimingLoop::kGraph;
  /// REPLAY_FROM: the recorded config of each benchmark name. A benchmark found here runs
  /// exactly that config, without tuning; one missing is tuned live (its record says so). A
  /// recorded config that is not one of the op's spaces, or that can_implement refuses for the
  /// shape, is never run: like one that fails to compile or launch, it is evicted from the
  /// cache and the key tuned live, with a marker (ChoiceLog::add_fallback).
  std::map<std::string, RecordedConfig> replay;
  /// Where `replay` was read from (REPLAY_FROM's configs.json), for messages.
  std::string replay_source;
  /// The run directory ("" when this run makes none): the sweep keeps its log there.
  std::filesystem::path run_dir;
  /// Families whose key the parallel warmup or the isolated sweep tuned in this run: their
  /// config comes from the cache but was tuned now, and is recorded as such (ConfigSource::kTuned).
  std::set<std::string> swept;
  /// TUNEBENCH_FAULT_INJECT, for tunebench's own tests.
  FaultInjection fault;
};

}  // namespace tunebench
