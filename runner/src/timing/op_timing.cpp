#include "timing/op_timing.hpp"

#include "common/plural.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace tunebench {

std::string timing_name(const TimingOptions& options) {
  return std::string(to_string(options.mode)) + (options.cold_l2 ? "+cold_l2" : "");
}

// The captured graphs of one config: one per workload variant, replayed in turn.
struct OpTiming::Graphs {
  std::string config;
  std::vector<cudaGraph_t> graphs;
  std::vector<cudaGraphExec_t> execs;
  std::vector<GraphLaunch> ids;
  std::size_t next = 0;
  ~Graphs() {
    for (auto e : execs) TUNEBENCH_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(e));
    for (auto g : graphs) TUNEBENCH_CUDA_CHECK_NOTHROW(cudaGraphDestroy(g));
  }
};

// The graph-batched loop's graph: whole cycles of the workload's variants, captured once.
struct OpTiming::Batch {
  std::string config;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GraphLaunch ids;
  std::vector<std::size_t> kernels;  // kernel nodes of each run, in launch order
  ~Batch() {
    if (exec) TUNEBENCH_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
    if (graph) TUNEBENCH_CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph));
  }
};

namespace {

// A batch holds about this much kernel time: its launch costs the host ~10 us, so the host
// stays far ahead of the GPU, and a Google Benchmark call that needs fewer runs wastes little.
constexpr std::int64_t kBatchKernelNs = 2'000'000;
// And at most this many runs: capture and instantiation grow with the nodes.
constexpr std::size_t kBatchMaxRuns = 1024;

std::size_t kernel_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  TUNEBENCH_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  TUNEBENCH_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::size_t kernels = 0;
  for (auto node : nodes) {
    cudaGraphNodeType type{};
    TUNEBENCH_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) {
      ++kernels;
    } else if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      TUNEBENCH_CUDA_CHECK(cudaGraphChildGraphNodeGetGraph(node, &child));
      kernels += kernel_nodes(child);
    }
  }
  return kernels;
}

}  // namespace

OpTiming::OpTiming(const Op& op, const Shape& shape, std::uint64_t seed, TimingOptions options, TimingFaults faults)
    : op_(op), options_(std::move(options)), faults_(std::move(faults)) {
  // No kernel can add 1% to a 5 us kernel (an empty one lasts 0.58 us on an H200, docs/timing.md),
  // so on the GPU the control scales what the timer measured: a known ratio on the real noise.
  if (faults_.slowdown > 0 && op_.needs_gpu()) gpu_scale_ = 1 + faults_.slowdown;
  work_ = op_.prepare(shape, seed);
  if (!op_.needs_gpu()) return;
  graph_ = options_.mode == TimingMode::kCudaGraph;
  stream_.emplace();
  if (!uses_cupti(options_.mode)) {
    event_.emplace(stream_->get());
  } else {
    cupti_.emplace();
  }
  if (options_.cold_l2) {
    int device = 0, l2 = 0;
    TUNEBENCH_CUDA_CHECK(cudaGetDevice(&device));
    TUNEBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    l2_flush_ = DeviceBuffer(2 * static_cast<std::size_t>(std::max(l2, 1 << 20)));
  }
}

OpTiming::~OpTiming() = default;

void OpTiming::flush_l2() {
  if (l2_flush_.get()) {
    // A different byte each time, so no write can be skipped as unchanged.
    TUNEBENCH_CUDA_CHECK(
        cudaMemsetAsync(l2_flush_.get(), static_cast<int>(++flushes_ & 0xff), l2_flush_.bytes(), stream()));
  }
}

OpTiming::Graphs& OpTiming::capture(const Config& config) {
  auto& slot = graphs_[config.str()];
  if (slot) return *slot;
  const std::size_t n = std::max<std::size_t>(1, work_->variants());
  // Eager runs first: lazy set-up (compilation, loading, tables made on first use) cannot be
  // captured, and each variant gets its set-up.
  for (std::size_t i = 0; i < n; ++i) op_.run(*work_, config, stream());
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
  auto g = std::make_unique<Graphs>();
  g->config = config.str();
  for (std::size_t i = 0; i < n; ++i) {
    TUNEBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      op_.run(*work_, config, stream());
    } catch (...) {
      if (cudaStreamEndCapture(stream(), &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    const cudaError_t ended = cudaStreamEndCapture(stream(), &graph);
    if (ended != cudaSuccess || !graph) {
      cudaGetLastError();
      throw std::runtime_error("the op cannot be captured into a CUDA graph (cudaStreamEndCapture: " +
                               std::string(cudaGetErrorName(ended)) + ")");
    }
    g->graphs.push_back(graph);
    cudaGraphExec_t exec = nullptr;
    TUNEBENCH_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    g->execs.push_back(exec);
    const std::size_t kernels = kernel_nodes(graph);
    if (kernels == 0) throw std::runtime_error("the op's CUDA graph has no kernel node");
    g->ids.push_back(cupti_ ? CuptiTimer::graph_launch(graph, exec, kernels) : GraphLaunch{0, 0, kernels});
  }
  // One launch of each (uploads the graphs), then clear their records away: attribution by
  // graph deals a graph's records to its launches in order.
  for (auto exec : g->execs) TUNEBENCH_CUDA_CHECK(cudaGraphLaunch(exec, stream()));
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
  if (cupti_) cupti_->collect();
  slot = std::move(g);
  return *slot;
}

// Graphs of the configs of `runs` only: a sweep visits many configs, a batch a few.
void OpTiming::keep_graphs_of(const std::vector<Config>& runs) {
  for (auto it = graphs_.begin(); it != graphs_.end();) {
    const bool used = std::any_of(runs.begin(), runs.end(), [&](const Config& c) { return c.str() == it->first; });
    it = used ? std::next(it) : graphs_.erase(it);
  }
}

void OpTiming::launch(const Config& config) {
  if (!graph_) {
    op_.run(*work_, config, stream());
    return;
  }
  Graphs& g = *graphs_.at(config.str());
  const std::size_t i = g.next++ % g.execs.size();
  TUNEBENCH_CUDA_CHECK(cudaGraphLaunch(g.execs[i], stream()));
  if (cupti_) cupti_->launched(g.ids[i]);
}

void OpTiming::check_faults(const Config& config) const {
  if (faults_.sticky_config.empty() && faults_.hang_config.empty()) return;
  const std::string& text = config.str();
  if (text == faults_.sticky_config) {
    throw CudaError("injected cudaErrorIllegalAddress", cudaErrorIllegalAddress, true);
  }
  while (text == faults_.hang_config) std::this_thread::sleep_for(std::chrono::seconds(1));
}

std::chrono::nanoseconds OpTiming::time_run(const Config& config) {
  try {
    return time_runs({config}).at(0);
  } catch (const BatchRunError& e) {
    std::rethrow_exception(e.cause);  // one run: what it threw, as it threw it
  }
}

std::vector<std::chrono::nanoseconds> OpTiming::time_runs(const std::vector<Config>& runs) {
  std::vector<std::chrono::nanoseconds> out;
  out.reserve(runs.size());
  const auto announce = [&](std::size_t i) {
    const std::string& text = runs[i].str();
    if (!ran_.count(text) && on_new_config_ && (i == 0 || !(runs[i - 1] == runs[i]))) on_new_config_(text);
  };
  if (graph_) {
    // Every graph captured before the first window: a capture runs its config and collects.
    keep_graphs_of(runs);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (graphs_.count(runs[i].str()) && graphs_.at(runs[i].str())) continue;
      try {
        announce(i);
        check_faults(runs[i]);
        capture(runs[i]);
        ran_.insert(runs[i].str());
      } catch (const std::exception& e) {
        throw BatchRunError(i, std::current_exception(), e.what());
      }
    }
  }
  if (cupti_) cupti_->reserve(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Config& c = runs[i];
    const std::string& text = c.str();
    const bool first = !ran_.count(text);
    try {
      announce(i);
      check_faults(c);
      if (cupti_) {
        flush_l2();
        cupti_->begin();
        launch(c);
        cupti_->end();
      } else if (event_) {
        flush_l2();
        event_->start();
        launch(c);
        out.push_back(scaled(event_->stop()));
      } else {
        host_.start();
        run_host(c);
        out.push_back(host_.stop());
      }
      if (first && (i + 1 == runs.size() || !(runs[i + 1] == c))) {
        // The end of a new config's runs: whatever its kernels did wrong shows here, by name.
        if (stream_) TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
        ran_.insert(text);
      }
    } catch (const std::exception& e) {
      if (cupti_) cupti_->discard();
      throw BatchRunError(i, std::current_exception(), e.what());
    }
  }
  if (!cupti_) return out;
  WindowTimes t;
  try {
    t = cupti_->collect();
  } catch (...) {
    cupti_->discard();
    throw;
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i >= t.kernels.size() || t.kernels[i] == 0) {
      throw std::runtime_error("no kernel record for run " + std::to_string(i) + " of a batch of " +
                               std::to_string(runs.size()) + " (" + runs[i].str() + ")");
    }
    if (graph_ && t.kernels[i] != graphs_.at(runs[i].str())->ids[0].kernels) {
      throw std::runtime_error(
          "run " + std::to_string(i) + " of a batch: its graph launch ran " +
          count_of(static_cast<long long>(graphs_.at(runs[i].str())->ids[0].kernels), "kernel", "kernels") + " but " +
          count_of(static_cast<long long>(t.kernels[i]), "record was", "records were") + " attributed to it");
    }
    out.push_back(scaled(std::chrono::nanoseconds(t.ns[i])));
  }
  return out;
}

std::chrono::nanoseconds OpTiming::scaled(std::chrono::nanoseconds ns) const {
  if (gpu_scale_ == 1) return ns;
  return std::chrono::nanoseconds(std::llround(static_cast<double>(ns.count()) * gpu_scale_));
}

void OpTiming::run_host(const Config& config) {
  if (faults_.slowdown <= 0) {
    op_.run(*work_, config, nullptr);
    return;
  }
  // The wait is this run's own time times F, so the injected ratio is 1 + F run by run, whatever
  // the machine's load does to the op's speed.
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  op_.run(*work_, config, nullptr);
  const auto ran = clock::now();
  const auto until = ran + std::chrono::duration_cast<clock::duration>((ran - start) * faults_.slowdown);
  while (clock::now() < until) {
  }
}

RunTimer OpTiming::run_timer() {
  return [this](const std::vector<Config>& runs) { return time_runs(runs); };
}

void OpTiming::warm(const Config& config) {
  if (graph_) {
    capture(config);
    return;
  }
  op_.run(*work_, config, stream());
  if (stream_) TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

namespace {

// Under manual time a zero or NaN iteration makes Google Benchmark grow the iteration count
// without bound, so such a time ends the benchmark instead.
bool usable(double seconds) { return seconds > 0 && std::isfinite(seconds); }

}  // namespace

std::optional<LoopTotal> OpTiming::cupti_loop(benchmark::State& state, const Config& config) {
  constexpr double kPlaceholder = 1e-12;
  const auto n = state.max_iterations;
  cupti_->reserve(static_cast<std::size_t>(n));  // no allocation inside the loop
  benchmark::IterationCount i = 0;
  std::optional<LoopTotal> result;
  for (auto _ : state) {
    flush_l2();
    cupti_->begin();
    launch(config);
    cupti_->end();
    if (++i < n) {
      state.SetIterationTime(kPlaceholder);
      continue;
    }
    const WindowTimes times = cupti_->collect();
    const std::size_t expected = graph_ ? graphs_.at(config.str())->ids[0].kernels : 0;
    double total_s = 0;
    for (std::size_t w = 0; w < times.ns.size(); ++w) {
      if (times.kernels[w] == 0) {
        state.SkipWithError(("iteration " + std::to_string(w) + " has no valid kernel record (" +
                             count_of(static_cast<long long>(times.invalid), "invalid record", "invalid records") + ")")
                                .c_str());
        return std::nullopt;
      }
      if (graph_ && times.kernels[w] != expected) {
        state.SkipWithError(("iteration " + std::to_string(w) + ": the graph launch ran " +
                             count_of(static_cast<long long>(expected), "kernel", "kernels") + " but " +
                             count_of(static_cast<long long>(times.kernels[w]), "record was", "records were") +
                             " attributed to it")
                                .c_str());
        return std::nullopt;
      }
      total_s += static_cast<double>(times.ns[w]) * 1e-9 * gpu_scale_;
    }
    const double last = total_s - static_cast<double>(n - 1) * kPlaceholder;
    if (!usable(last)) {
      state.SkipWithError("kernel time was zero or not finite");
      return std::nullopt;
    }
    state.SetIterationTime(last);
    result = LoopTotal{static_cast<double>(n), total_s};  // the loop ends after this iteration
  }
  return result;
}

// One eager run of each variant, each in its own window: the warm-up (compilation, loading, first
// touch; a config that fails does so here, by name) and the size of a cycle's kernel time.
std::int64_t OpTiming::eager_cycle_ns(const Config& config) {
  check_faults(config);
  const std::size_t variants = std::max<std::size_t>(1, work_->variants());
  cupti_->reserve(variants);
  try {
    for (std::size_t i = 0; i < variants; ++i) {
      flush_l2();
      cupti_->begin();
      op_.run(*work_, config, stream());
      cupti_->end();
    }
    TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
  } catch (...) {
    cupti_->discard();
    throw;
  }
  const WindowTimes t = cupti_->collect();
  std::int64_t ns = 0;
  for (const auto v : t.ns) ns += v;
  return ns;
}

// The batch graph of `config`, captured on first use (after a timed eager cycle); nullptr, with
// batch_refused_ set, when the op's runs cannot be captured.
OpTiming::Batch* OpTiming::batch_for(const Config& config) {
  if (batch_ && batch_->config == config.str()) return batch_.get();
  batch_.reset();
  const std::size_t variants = std::max<std::size_t>(1, work_->variants());
  const std::int64_t cycle_ns = std::max<std::int64_t>(1, eager_cycle_ns(config));
  // Whole cycles, so every launch of the graph continues the rotation where the last ended:
  // each run's weights (or routing) were last read a full cycle before, as in an eager loop.
  const std::size_t cycles = std::clamp<std::size_t>(static_cast<std::size_t>(kBatchKernelNs / cycle_ns), 1,
                                                     std::max<std::size_t>(1, kBatchMaxRuns / variants));
  auto b = std::make_unique<Batch>();
  b->config = config.str();
  TUNEBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
  std::size_t counted = 0;
  const auto refuse = [&](const std::string& why) -> Batch* {
    cudaGraph_t partial = nullptr;
    cudaStreamCaptureStatus status{};
    if (cudaStreamIsCapturing(stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone &&
        cudaStreamEndCapture(stream(), &partial) == cudaSuccess && partial) {
      cudaGraphDestroy(partial);
    }
    cudaGetLastError();
    batch_refused_ = why;
    return nullptr;
  };
  try {
    for (std::size_t i = 0; i < cycles * variants; ++i) {
      flush_l2();
      op_.run(*work_, config, stream());
      if (i < variants) {  // later cycles repeat the first one's kernels (checked below)
        cudaStreamCaptureStatus status{};
        cudaGraph_t so_far = nullptr;
        TUNEBENCH_CUDA_CHECK(cudaStreamGetCaptureInfo(stream(), &status, nullptr, &so_far));
        const std::size_t now = kernel_nodes(so_far);
        b->kernels.push_back(now - counted);
        counted = now;
      }
    }
  } catch (const CudaError& e) {
    if (e.sticky()) throw;
    return refuse(e.what());
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  const cudaError_t ended = cudaStreamEndCapture(stream(), &b->graph);
  if (ended != cudaSuccess || !b->graph) {
    b->graph = nullptr;
    return refuse(std::string("cudaStreamEndCapture: ") + cudaGetErrorName(ended));
  }
  const std::size_t total = kernel_nodes(b->graph);
  if (counted == 0 || total != cycles * counted ||
      std::any_of(b->kernels.begin(), b->kernels.end(), [](std::size_t k) { return k == 0; })) {
    return refuse("a captured run has no kernel node, or the cycles differ (" +
                  count_of(static_cast<long long>(total), "kernel node", "kernel nodes") + " in " +
                  count_of(static_cast<long long>(cycles), "cycle", "cycles") + " of " + std::to_string(counted) + ")");
  }
  for (std::size_t c = 1; c < cycles; ++c)
    b->kernels.insert(b->kernels.end(), b->kernels.begin(), b->kernels.begin() + variants);
  TUNEBENCH_CUDA_CHECK(cudaGraphInstantiate(&b->exec, b->graph, 0));
  b->ids = CuptiTimer::graph_launch(b->graph, b->exec, total);
  TUNEBENCH_CUDA_CHECK(cudaGraphUpload(b->exec, stream()));
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream()));
  batch_ = std::move(b);
  return batch_.get();
}

std::optional<LoopTotal> OpTiming::batch_loop(benchmark::State& state, const Batch& b) {
  const auto n = static_cast<std::size_t>(state.max_iterations);
  const std::size_t per_launch = b.kernels.size();
  const std::size_t launches = (n + per_launch - 1) / per_launch;
  WindowTimes t;
  try {
    // All launches first, outside every window: the GPU runs them back to back while the host
    // waits in the collection; no launch gap between runs.
    for (std::size_t l = 0; l < launches; ++l) TUNEBENCH_CUDA_CHECK(cudaGraphLaunch(b.exec, stream()));
    t = cupti_->collect_graph_runs(b.ids, b.kernels, launches);
  } catch (...) {
    cupti_->discard();
    throw;
  }
  for (std::size_t w = 0; w < n; ++w) {
    const std::size_t expected = b.kernels[w % per_launch];
    if (t.kernels[w] != expected) {
      state.SkipWithError(("run " + std::to_string(w) + " of a graph batch ran " +
                           count_of(static_cast<long long>(expected), "kernel", "kernels") + " but " +
                           count_of(static_cast<long long>(t.kernels[w]), "record was", "records were") +
                           " attributed to it (" +
                           count_of(static_cast<long long>(t.invalid), "invalid record", "invalid records") + ")")
                              .c_str());
      return std::nullopt;
    }
  }
  LoopTotal total{static_cast<double>(n), 0};
  std::size_t i = 0;
  for (auto _ : state) {
    const double seconds = static_cast<double>(t.ns[i++]) * 1e-9 * gpu_scale_;
    if (!usable(seconds)) {
      state.SkipWithError("kernel time was zero or not finite");
      return std::nullopt;
    }
    state.SetIterationTime(seconds);
    total.seconds += seconds;
  }
  return total;
}

std::optional<LoopTotal> OpTiming::measure(benchmark::State& state, const Config& config) {
  const auto started = std::chrono::steady_clock::now();
  const auto set_up = [&] {
    setup_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  if (cupti_ && options_.loop == TimingLoop::kGraph && batch_refused_.empty()) {
    if (const Batch* b = batch_for(config)) {
      set_up();
      return batch_loop(state, *b);
    }
  }
  warm(config);
  set_up();
  if (cupti_) return cupti_loop(state, config);
  double total_s = 0;
  for (auto _ : state) {
    double seconds = 0;
    if (event_) {
      flush_l2();
      event_->start();
      launch(config);
      seconds = std::chrono::duration<double>(event_->stop()).count() * gpu_scale_;
    } else {
      host_.start();
      run_host(config);
      seconds = std::chrono::duration<double>(host_.stop()).count();
    }
    if (!usable(seconds)) {
      state.SkipWithError("iteration time was zero or not finite");
      return std::nullopt;
    }
    state.SetIterationTime(seconds);
    total_s += seconds;
  }
  return LoopTotal{static_cast<double>(state.iterations()), total_s};
}

}  // namespace tunebench
