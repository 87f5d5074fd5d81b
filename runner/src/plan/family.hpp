#pragma once
// Benchmark families: one Google Benchmark benchmark per op x shape set x shape.

#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tune/autotuner.hpp"
#include "tunebench/cache/config_cache.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/op.hpp"
#include "timing/op_timing.hpp"
#include "report/run_record.hpp"
#include "tunebench/shape.hpp"

namespace tunebench {

/// One registered benchmark: an op on one shape.
struct Family {
  std::string name;  ///< family_name(*op, shape)
  std::shared_ptr<const Op> op;
  Shape shape;
};

/// The stable benchmark name "<op>/<set>/M:<m>/N:<n>/K:<k>", with "/E:<e>/topk:<k>" appended
/// for routed ops, e.g. "mxfp4_moe/dsv4f_decode_ep/M:8/N:4096/K:4096/E:256/topk:6". It depends
/// on nothing but the op and the shape: not on flags, devices or order, so compare.py can pair
/// runs by it. Google Benchmark appends "/manual_time" when it reports the benchmark.
std::string family_name(const Op& op, const Shape& shape);

/// The name Google Benchmark reports and filters on: family_name + "/manual_time".
std::string reported_name(const Family& family);

/// Every op x set x shape, in that nesting order, leaving out the sets an op's shape_rules()
/// do not apply to (a routed op, or one that needs_moe, on a set without a `moe:` block).
/// Throws ShapeError when a set breaks an op's K rule (check_shape_rules: one line naming the
/// file, the entry and its line), std::invalid_argument if two families would share a name
/// (two ops of one name, say).
std::vector<Family> make_families(const OpList& ops, const std::vector<ShapeSet>& sets);

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
  /// How GPU ops are timed (TimingOptions::mode): "kernel" (CUPTI kernel durations of eager
  /// launches), "cudagraph" (CUPTI durations of CUDA-graph replays) or "event" (CUDA events
  /// around the launches, launch overhead included; the fallback when CUPTI cannot be used).
  std::string timing_mode = "kernel";
  /// Flush L2 before every timed run (TimingOptions::cold_l2); part of the cache key's timing.
  bool cold_l2 = false;
  /// Peaks for the "roofline%" counter of GPU ops (0: unknown device, no counter): memory
  /// bandwidth in bytes/s and dense BF16 tensor-core rate in FLOP/s. See roofline_peaks().
  double peak_bytes_per_s = 0;
  double peak_flops = 0;
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
};

/// Peaks of a device known to tunebench, by name: for "H200", the device-to-device copy
/// bandwidth (4243 GB/s, read + write) and the BF16 GEMM rate of a library GEMM on random data
/// (790 TFLOP/s) measured on an H200 (docs/perf-mxfp4.md); {0, 0} for other devices. Measured
/// rather than datasheet peaks, so 100% is what the card was seen to reach.
std::pair<double, double> roofline_peaks(const std::string& device_name);

/// The cache key of `op` on `shape` in this run: its kernel version and tuning key, the device
/// (the CPU for host ops), the toolkit ("host" for host ops) and the timing mode ("host" for
/// host ops, timing_name of context.timing_mode and context.cold_l2 for GPU ops).
cache::Key cache_key(const Op& op, const Shape& shape, const RunContext& context);

/// The config the cache holds for `family` in this run, if it answers the key: a best config of
/// the op's own spaces that can_implement accepts and, when context.tune.space is the expanded
/// space (USE_FLAGTUNE=1), a measurement for every other expanded config that fits (so a best
/// left by a plain sweep does not answer an exhaustive one). Nothing without a cache. When the
/// cached best is not a config this op can run, says so in `unusable` (if given). Throws
/// cache::SqliteError when the cache cannot be read.
std::optional<Config> cached_config(const Family& family, const RunContext& context,
                                    std::string* unusable = nullptr);

/// The config `family` will be timed with: the cache's, else tuned now (a sweep timed as the
/// benchmark would time it, stored in the cache). `options` replaces context.tune when given.
/// Throws std::runtime_error when no config runs (or CUDA left a sticky error), and, before
/// any sweep, when the key needs tuning and context.cache is read-only (its result could not
/// be stored).
Config ensure_tuned(const Family& family, const RunContext& context, const TuneOptions* options = nullptr);

/// Registers `family` with benchmark::RegisterBenchmark: manual time in the op's time unit,
/// the config as the label (GPU ops: followed by the timing name in parentheses), counters
/// TFLOP/s and GB/s (over the mean iteration time), roofline% where the device's peaks are
/// known, and sm_mhz_start / sm_mhz_end (the SM clock before and after the timing loop, GPU
/// ops, where NVML can read it). The
/// config is the cached best of the family's key; a key not in the cache is autotuned first,
/// outside the measured time, and the result stored (with a read-only cache it is not tuned:
/// the benchmark ends with an error naming the cache and the key). A family of a GPU op on a machine without
/// a GPU, a sweep in which no config ran, or any exception from the op ends that benchmark with
/// SkipWithError and a reason; an iteration time that is zero or not finite likewise.
void register_family(const Family& family, std::shared_ptr<const RunContext> context);

}  // namespace tunebench
