#pragma once
// Timing an op's runs the way a benchmark measures them: the timing modes (kernel, cudagraph,
// event; host ops on the host clock), the cold-L2 option, and Google Benchmark's timing loop.
// Design and measurements: docs/timing.md.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "timing/cupti_timer.hpp"
#include "timing/run_timer.hpp"
#include "timing/timer.hpp"
#include "timing/timing_mode.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/op.hpp"

namespace tunebench {

/// How GPU ops are timed (host ops always on the host's steady clock).
struct TimingOptions {
  /// kKernel: eager launches, each run's time the sum of its kernels' CUPTI durations;
  /// kCudaGraph: each run captured once into a CUDA graph (Workload::variants() graphs) and
  /// replayed, kernels attributed by graph, CUPTI durations;
  /// kEvent: CUDA events around the eager launches, launch gaps included.
  TimingMode mode = TimingMode::kKernel;
  /// Before every timed run, overwrite a buffer of twice the L2 size (allocated once) so the
  /// run finds nothing of its inputs in L2. The flush is outside the measured window.
  bool cold_l2 = false;
  /// How measure() launches the runs of the CUPTI modes: kGraph, batches of runs captured once
  /// into one CUDA graph; kEager, run by run. Not part of timing_name(): the two measure the
  /// same kernels (docs/timing.md, "Graph-batched loop").
  TimingLoop loop = TimingLoop::kGraph;
};

/// Faults for tunebench's own tests (TUNEBENCH_FAULT_INJECT); empty: none.
struct TimingFaults {
  std::string sticky_config;  ///< runs of this config fail like an illegal memory access (sticky)
  std::string hang_config;    ///< runs of this config never return, like a kernel that does not end
  /// The A/B method's positive control: every timed run takes this fraction longer. A host op
  /// busy-waits in the timed window for this fraction of the run's own time; a GPU op's measured time (CUPTI or events)
  /// is multiplied by 1 + slowdown, since no added kernel is short enough to lengthen a 5 us kernel by 1% (an empty
  /// kernel: 0.58 us on an H200, docs/timing.md). Either way the injected ratio is 1 + slowdown on the run's own noise.
  double slowdown = 0;
};

/// The name of `options` as the cache key's timing field, the JSON context and the benchmark
/// label carry it: the mode, with "+cold_l2" appended when set (e.g. "cudagraph+cold_l2").
std::string timing_name(const TimingOptions& options);

/// What a timing loop measured, for the rate counters.
struct LoopTotal {
  double iterations = 0;
  double seconds = 0;  ///< the sum of the iteration times reported to Google Benchmark
};

/// An op's workload, stream and timer for one shape: one run timed as its benchmark times it.
/// GPU ops need a current CUDA device (and CUPTI for "kernel" and "cudagraph").
class OpTiming {
 public:
  /// Prepares the op's workload from `seed`. Throws std::runtime_error when CUPTI is needed and unavailable, and what
  /// Op::prepare throws.
  OpTiming(const Op& op, const Shape& shape, std::uint64_t seed, TimingOptions options, TimingFaults faults = {});
  ~OpTiming();
  OpTiming(const OpTiming&) = delete;
  OpTiming& operator=(const OpTiming&) = delete;

  /// The time of one run of `config` (the autotuner's RunTimer): kernel time in "kernel" and
  /// "cudagraph" mode (a config's graphs are captured on its first run), event time in
  /// "event", wall time for host ops. Throws what the op throws, CudaError, or
  /// std::runtime_error (no kernel record, a run that cannot be captured into a graph).
  std::chrono::nanoseconds time_run(const Config& config);
  /// The times of a batch of runs launched back to back in the order given (configs may repeat
  /// and interleave): in "kernel" and "cudagraph" mode one device sync and one CUPTI collection
  /// for the whole batch, each run's kernels attributed to it by correlation id (or graph), the
  /// L2 flush (cold_l2) between runs and outside their windows; each run goes through the op's
  /// run(), so weight-bound ops still rotate their weights and every run is cold. "event" mode
  /// and host ops time run by run. The device is synchronised after the runs of a config this
  /// object never ran before (its first runs are where a config that does not work fails), so
  /// what a run throws, or an error its kernels leave, is thrown as BatchRunError naming the run;
  /// an error found only at the collection (no kernel record) is thrown as itself. A batch that
  /// throws yields no times.
  std::vector<std::chrono::nanoseconds> time_runs(const std::vector<Config>& runs);
  /// Called with a config's text before the first run of a config this object never ran (the
  /// sweep's watchdog names the config a hang is in); may be empty.
  void on_new_config(std::function<void(const std::string& config)> callback) { on_new_config_ = std::move(callback); }
  /// time_runs as a RunTimer bound to this object.
  RunTimer run_timer();

  /// One untimed run (compile, load, first touch; the graph capture in "cudagraph" mode), then
  /// a device sync. Throws what the op throws.
  void warm(const Config& config);

  /// Google Benchmark's timing loop for `config`; reports every iteration with
  /// SetIterationTime.
  /// - Graph-batched (CUPTI modes, options().loop kGraph): on the first call for a config, one
  ///   eager cycle of the workload's variants (timed: it sizes the batch) and the capture of a
  ///   batch of whole cycles into one CUDA graph, about 2 ms of kernels (at most 1024 runs);
  ///   then every call launches ceil(n / batch) graphs back to back, collects once, and gives
  ///   iteration i the kernel time of run i (runs beyond n are launched and not reported). An op
  ///   whose runs cannot be captured is timed as kEager from then on (batch_refused() says why).
  /// - Eager (kEager, event mode, host ops): one run per iteration after warm(config). CUPTI
  ///   modes collect records once, at the last iteration (earlier iterations report a 1 ps
  ///   placeholder and the last the rest of the total, so the mean is exact without a flush
  ///   per iteration).
  /// Ends the benchmark with SkipWithError, and returns nothing, when a run has no valid kernel
  /// record, a graph's kernels are not all attributed, or a time is zero or not finite. Throws
  /// what the op throws, CudaError, or std::runtime_error (CUPTI dropped records).
  std::optional<LoopTotal> measure(benchmark::State& state, const Config& config);

  /// Why this object's runs could not be captured into a batch graph ("" when they could or
  /// were never tried): measure() then times them eagerly.
  const std::string& batch_refused() const { return batch_refused_; }

  /// Wall seconds measure() has spent before its timed runs, summed over its calls: the warm-up
  /// run, or the graph-batched loop's eager cycle, capture, instantiation and upload (the first
  /// call for a config; later calls add about nothing). timing_stage.json reports it per
  /// benchmark as setup_seconds.
  double setup_seconds() const { return setup_seconds_; }

  const TimingOptions& options() const { return options_; }
  /// The workload's run variants (Workload::variants(), at least 1): the sweep pads its
  /// interleaved passes by it (TuneOptions::run_variants).
  std::size_t variants() const { return std::max<std::size_t>(1, work_->variants()); }

 private:
  struct Graphs;
  struct Batch;
  Batch* batch_for(const Config& config);
  std::optional<LoopTotal> batch_loop(benchmark::State& state, const Batch& batch);
  std::int64_t eager_cycle_ns(const Config& config);
  void flush_l2();
  Graphs& capture(const Config& config);
  void keep_graphs_of(const std::vector<Config>& runs);
  void check_faults(const Config& config) const;
  void launch(const Config& config);  // one eager run or the next graph replay
  cudaStream_t stream() const { return stream_ ? stream_->get() : nullptr; }
  std::optional<LoopTotal> cupti_loop(benchmark::State& state, const Config& config);

  const Op& op_;
  TimingOptions options_;
  TimingFaults faults_;
  bool graph_ = false;  // replays CUDA graphs: "cudagraph" mode of a GPU op
  std::unique_ptr<Workload> work_;
  std::optional<Stream> stream_;
  HostTimer host_;
  std::optional<CuptiTimer> cupti_;
  std::optional<EventTimer> event_;
  DeviceBuffer l2_flush_;
  unsigned flushes_ = 0;
  std::map<std::string, std::unique_ptr<Graphs>> graphs_;              // by Config::str()
  std::set<std::string> ran_;                                          // configs whose first runs synchronised clean
  void run_host(const Config& config);                                 // one host run, and the positive control's wait
  double gpu_scale_ = 1;                                               // 1 + faults_.slowdown for a GPU op
  std::chrono::nanoseconds scaled(std::chrono::nanoseconds ns) const;  // times gpu_scale_
  std::function<void(const std::string&)> on_new_config_;
  std::unique_ptr<Batch> batch_;  // the graph-batched loop's graph, of one config
  std::string batch_refused_;
  double setup_seconds_ = 0;
};

}  // namespace tunebench
