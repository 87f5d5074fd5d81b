#pragma once
// The run's context: what the sweep, the config choice and the benchmark body need besides a
// family. Made by make_context (run/context_setup.cpp) and completed by the sweep stage (which
// fills `swept`) before anything is registered; after that only its mutex-guarded members change.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "plan/family.hpp"
#include "report/run_record.hpp"
#include "settings/settings.hpp"
#include "timing/op_timing.hpp"
#include "tune/autotuner.hpp"
#include "tunebench/cache/config_cache.hpp"
#include "tunebench/cuda.hpp"

namespace tunebench {

/// What the benchmark body needs besides its family.
struct RunContext {
  bool gpu_available = false;  ///< a CUDA device can be used
  std::string gpu_reason;      ///< why not, when !gpu_available (one line)
  std::uint64_t seed = 0;      ///< input seed, the same for every benchmark of a run
  /// The measurement device (ordinal 0), or sm90_reference_device() when there is none.
  DeviceInfo device = sm90_reference_device();
  /// Where tuned configs are kept; null tunes every benchmark afresh and keeps nothing.
  std::shared_ptr<cache::ConfigCache> cache;
  TuneOptions tune;            ///< how a key that is not cached gets tuned
  std::string host_name;       ///< the CPU model, the "device" of host ops' cache keys
  std::string cuda_toolkit;    ///< "cuda <major>.<minor>" of the runtime, for GPU ops' keys
  /// How GPU ops are timed (TimingOptions::mode); kEvent is also the fallback when CUPTI cannot
  /// be used.
  TimingMode timing_mode = TimingMode::kKernel;
  /// Flush L2 before every timed run (TimingOptions::cold_l2); part of the cache key's timing.
  bool cold_l2 = false;
  /// Every benchmark's config and its source is added here (record mode); may be null.
  std::shared_ptr<RunRecord> record;
  /// REPLAY_FROM: the recorded config of each benchmark name. A benchmark found here runs
  /// exactly that config, without tuning; one missing is tuned live (its record says so). A
  /// recorded config that is not one of the op's spaces, or that can_implement refuses for the
  /// shape, is never run: like one that fails to compile or launch, it is evicted from the
  /// cache and the key tuned live, with a marker (ReplayFallbacks).
  std::map<std::string, RecordedConfig> replay;
  /// Where `replay` was read from (REPLAY_FROM's configs.json), for messages.
  std::string replay_source;
  /// The run directory ("" when this run makes none): the sweep keeps its log there.
  std::filesystem::path run_dir;
  /// Families whose key the parallel warmup or the isolated sweep tuned in this run: their
  /// config comes from the cache but was tuned now, and is recorded as such (ConfigSource::kTuned).
  std::set<std::string> swept;
  /// Replayed configs that failed or that the op cannot run, and what replaced them (shared by
  /// the benchmark's calls).
  struct ReplayFallbacks {
    std::mutex mutex;
    std::map<std::string, Config> config_of;  ///< family name -> the live-tuned config
    /// "compile_<op>_evicted" (the failing config was evicted from the cache) or
    /// "compile_<op>_no_evict" (the eviction failed) -> the families concerned.
    std::map<std::string, std::vector<std::string>> markers;
  };
  std::shared_ptr<ReplayFallbacks> fallbacks = std::make_shared<ReplayFallbacks>();
  /// Winners of sweeps the cache could not take (another process held its write lock past the
  /// retries): kept for this run only, so the benchmark and any other of the same key run the
  /// config that was tuned instead of losing the sweep.
  struct Unstored {
    std::mutex mutex;
    std::map<cache::Key, Config> best_of;
  };
  std::shared_ptr<Unstored> unstored = std::make_shared<Unstored>();
  /// The benchmark that ran last: its workload, timer and chosen config, kept while Google
  /// Benchmark calls the same benchmark again (once per iteration-count probe and per
  /// repetition), so inputs are prepared and the config chosen once per benchmark, not per
  /// call. Only one is kept: the next benchmark frees it before preparing its own.
  struct LastBenchmark {
    std::mutex mutex;                  ///< guards the members (benchmarks run on one thread)
    std::string name;                  ///< family name, "" when empty
    std::unique_ptr<OpTiming> timing;  ///< its workload, stream and timer
    Config config;                     ///< the config it is timed with
    std::string label;                 ///< the label its runs carry
    /// Frees the workload (call before CUDA shuts down: after RunSpecifiedBenchmarks).
    void release() {
      std::lock_guard<std::mutex> lock(mutex);
      timing.reset();
      name.clear();
    }
  };
  std::shared_ptr<LastBenchmark> last = std::make_shared<LastBenchmark>();
  /// TUNEBENCH_FAULT_INJECT, for tunebench's own tests.
  FaultInjection fault;
};

}  // namespace tunebench
