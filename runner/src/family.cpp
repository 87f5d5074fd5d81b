#include "tunebench/family.hpp"

#include <chrono>
#include <cmath>
#include <exception>
#include <set>
#include <stdexcept>

#include "tunebench/timer.hpp"

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

std::vector<Family> make_families(const OpList& ops, const std::vector<ShapeSet>& sets) {
  std::vector<Family> families;
  std::set<std::string> names;
  for (const auto& op : ops) {
    for (const auto& set : sets) {
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

template <class Timer>
void timing_loop(benchmark::State& state, const Family& family, Workload& work, const Config& config,
                 cudaStream_t stream, Timer& timer) {
  const Op& op = *family.op;
  double total_s = 0;
  for (auto _ : state) {
    timer.start();
    op.run(work, config, stream);
    const double seconds = std::chrono::duration<double>(timer.stop()).count();
    // Under manual time a zero or NaN iteration makes Google Benchmark grow the iteration
    // count without bound, so it ends the benchmark instead.
    if (!(seconds > 0) || !std::isfinite(seconds)) {
      state.SkipWithError("iteration time was zero or not finite");
      return;
    }
    state.SetIterationTime(seconds);
    total_s += seconds;
  }
  // Counter::kIsRate divides by CPU time, not manual time, so the rates are computed here.
  const double iterations = static_cast<double>(state.iterations());
  state.counters["TFLOP/s"] = op.flops(family.shape) * iterations / total_s / 1e12;
  state.counters["GB/s"] = op.bytes(family.shape) * iterations / total_s / 1e9;
}

void run_timed(benchmark::State& state, const Family& family, const RunContext& context) {
  const Op& op = *family.op;
  if (op.needs_gpu() && !context.gpu_available) {
    state.SkipWithError(("no CUDA device: " + context.gpu_reason).c_str());
    return;
  }
  const Config config = op.default_config(family.shape, context.device);
  state.SetLabel(config.str());
  auto work = op.prepare(family.shape, context.seed);
  if (!op.needs_gpu()) {
    op.run(*work, config, nullptr);  // warm caches and lazy set-up, outside the measurement
    HostTimer timer;
    timing_loop(state, family, *work, config, nullptr, timer);
    return;
  }
  Stream stream;
  op.run(*work, config, stream.get());  // compiles and loads the kernel, outside the measurement
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EventTimer timer(stream.get());
  timing_loop(state, family, *work, config, stream.get(), timer);
}

}  // namespace

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
