// perf_harness: the benchmark of tunebench's own measurement harness (needs a GPU).
//
// 1. Host overhead per iteration: Google Benchmark's CPU time per iteration of an empty
//    one-block kernel under each timing mode, against a bare cudaLaunchKernel loop.
// 2. Wall time of whole benchmarks (prepare, warm, Google Benchmark's iteration probing, the
//    final run) against the time they report as measured, at the default min_time, for spin
//    kernels of 5, 20 and 100 us and for mxfp4_gemm with a fixed config (no sweep).
// 3. --crosscheck=RUNS: times single-kernel runs (a 50 us spin, mxfp4_gemm decode and prefill
//    configs without split-K) eagerly with CUPTI, RUNS back to back and RUNS isolated (idle
//    before each), and prints "crosscheck <case> <isolated median ns> <back-to-back median ns>";
//    scripts/ncu_check.sh compares them with ncu's gpu__time_duration of the same kernels.
//    Under ncu, where CUPTI is taken, it only launches (1 + 2 x RUNS per case).
//
// 4. --sweep-harness=RUNS: the sweep's harness cost per timed run (wall time per run less
//    kernel time per run) of OpTiming, RUNS runs one per call (a sync and a CUPTI collection per
//    run, the sweep before batching) against RUNS runs in batches of 16 (time_runs, as the race
//    times), for a 5 us spin and mxfp4_gemm decode (M=8) and prefill (M=512) configs.
//
// usage: perf_harness [--crosscheck=RUNS | --sweep-harness=RUNS] [Google Benchmark flags]

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mxfp4_gpu.hpp"
#include "plan/family.hpp"
#include "run/benchmark_body.hpp"
#include "spin_op.hpp"
#include "timing/cupti_timer.hpp"
#include "timing/op_timing.hpp"
#include "tunebench/device.hpp"

namespace {

using namespace tunebench;
using bench::Mxfp4GemmOp;
using bench::SpinOp;
using clock_type = std::chrono::steady_clock;

Shape gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  Shape s;
  s.set = "harness";
  s.gemm = "w13";
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

// The final run of each benchmark, as Google Benchmark reports it.
class Keep : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) last[r.benchmark_name()] = r;
  }
  std::map<std::string, Run> last;
};

std::shared_ptr<RunContext> context_for(TimingMode mode, const DeviceInfo& device) {
  auto c = std::make_shared<RunContext>();
  c->gpu_available = true;
  c->device = device;
  c->timing_mode = mode;
  return c;
}

// Host time of one cudaLaunchKernel of the empty spin kernel, in us (the floor of any loop).
double bare_launch_us(const SpinOp& empty) {
  Stream stream;
  auto work = empty.prepare(gemm_shape(1, 1, 1), 0);
  const Config c = empty.config_space(SpaceKind::kDefault)[0];
  empty.run(*work, c, stream.get());  // compile and load
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  constexpr int kLaunches = 500;
  const auto t0 = clock_type::now();
  for (int i = 0; i < kLaunches; ++i) empty.run(*work, c, stream.get());
  const auto t1 = clock_type::now();
  TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / kLaunches;
}

// One op, shape and config a harness measurement times; `name` labels its row.
struct Case {
  const Op* op;
  Shape shape;
  Config config;
  std::string name;
};

int crosscheck(int runs, const DeviceInfo& device) {
  std::string why;
  const bool cupti = CuptiTimer::available(&why);
  if (!cupti) std::cout << "crosscheck: CUPTI unavailable (" << why << "): launching only\n";
  SpinOp spin("spin_50us", 50'000);
  Mxfp4GemmOp mxfp4(false);
  std::vector<Case> cases = {{&spin, gemm_shape(1, 1, 1), spin.config_space(SpaceKind::kDefault)[0], "spin"}};
  for (const std::int64_t m : {8, 512}) {
    const Shape s = gemm_shape(m, 4096, 4096);
    for (const auto& c : mxfp4.config_space(SpaceKind::kDefault)) {
      if (!bench::is_dequant_config(c) && !bench::is_decode_config(c) && c.get("SPLIT_K") == 1 &&
          (m == 8) == (c.get("BLOCK_M") == 8) && mxfp4.can_implement(c, s, device)) {
        cases.push_back({&mxfp4, s, c, "mxfp4_gemm"});
        break;
      }
    }
  }
  for (const auto& k : cases) {
    Stream stream;
    auto work = k.op->prepare(k.shape, 1);
    k.op->run(*work, k.config, stream.get());
    TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    // Back to back (as the benchmarks run) and isolated (a synchronization and 1 ms idle before
    // each run, as under ncu, which serializes and instruments between kernels).
    std::vector<std::int64_t> back_to_back, isolated;
    if (cupti) {
      CuptiTimer timer;
      for (int i = 0; i < runs; ++i) {
        timer.begin();
        k.op->run(*work, k.config, stream.get());
        timer.end();
      }
      back_to_back = timer.collect().ns;
      for (int i = 0; i < runs; ++i) {
        TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        timer.begin();
        k.op->run(*work, k.config, stream.get());
        timer.end();
      }
      isolated = timer.collect().ns;
    } else {
      for (int i = 0; i < 2 * runs; ++i) {
        if (i >= runs) {
          TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        k.op->run(*work, k.config, stream.get());
      }
      TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    }
    std::cout << "case " << k.name << " M=" << k.shape.m << " [" << k.config.str() << "]\n";
    if (cupti) {
      const auto median = [](std::vector<std::int64_t> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      std::cout << "crosscheck " << k.name << "_M" << k.shape.m << " " << median(isolated) << " "
                << median(back_to_back) << "\n";
    }
  }
  return 0;
}

// The sweep's harness cost per timed run, run by run against batched.
int sweep_harness(int runs, const DeviceInfo& device) {
  std::string why;
  if (!CuptiTimer::available(&why)) {
    std::cerr << "perf_harness: CUPTI unavailable (" << why << ")\n";
    return 1;
  }
  SpinOp spin("spin_5us", 5'000);
  Mxfp4GemmOp mxfp4(false);
  std::vector<Case> cases = {{&spin, gemm_shape(1, 1, 1), spin.config_space(SpaceKind::kDefault)[0], "spin_5us"}};
  for (const std::int64_t m : {8, 512}) {
    const Shape s = gemm_shape(m, 4096, 4096);
    cases.push_back({&mxfp4, s, mxfp4.default_config(s, device), "mxfp4_gemm M=" + std::to_string(m) + " N=K=4096"});
  }
  constexpr int kBatch = 16;
  std::printf("Sweep harness cost per timed run (%d runs each; kernel time by CUPTI; wall from the host clock):\n",
              runs);
  std::printf("%-28s %12s %16s %16s %16s %16s\n", "case", "kernel us/run", "1/call wall us", "1/call harness us",
              "batch wall us", "batch harness us");
  for (const auto& k : cases) {
    OpTiming timing(*k.op, k.shape, 1, {TimingMode::kKernel, false});
    timing.warm(k.config);
    double kernel_ns = 0;
    auto t0 = clock_type::now();
    for (int i = 0; i < runs; ++i) kernel_ns += static_cast<double>(timing.time_run(k.config).count());
    const double single_wall_us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / runs;
    const double single_kernel_us = kernel_ns * 1e-3 / runs;
    kernel_ns = 0;
    t0 = clock_type::now();
    for (int done = 0; done < runs; done += kBatch) {
      const int n = std::min(kBatch, runs - done);
      for (const auto& t : timing.time_runs(std::vector<Config>(static_cast<std::size_t>(n), k.config))) {
        kernel_ns += static_cast<double>(t.count());
      }
    }
    const double batch_wall_us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / runs;
    const double batch_kernel_us = kernel_ns * 1e-3 / runs;
    std::printf("%-28s %12.2f %16.2f %16.2f %16.2f %16.2f\n", k.name.c_str(), batch_kernel_us, single_wall_us,
                single_wall_us - single_kernel_us, batch_wall_us, batch_wall_us - batch_kernel_us);
  }
  // The screen's fixed cost per config: a warmup and a timed run of every decode config of a key
  // in one batch, the first runs of each config synchronised (as for a config the process never
  // ran), with and without a watchdog record per config, against the same batch once all ran.
  const Shape decode = gemm_shape(8, 4096, 4096);
  std::vector<Config> screen;
  for (const auto& c : mxfp4.config_space(SpaceKind::kDefault)) {
    if (mxfp4.can_implement(c, decode, device)) screen.insert(screen.end(), {c, c});
  }
  const auto wall_per_config_us = [&](OpTiming& timing) {
    const auto t0 = clock_type::now();
    const auto times = timing.time_runs(screen);
    double kernel_us = 0;
    for (const auto& t : times) kernel_us += static_cast<double>(t.count()) * 1e-3;
    const double wall_us = std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
    return std::make_pair(wall_us * 2 / static_cast<double>(screen.size()),
                          kernel_us * 2 / static_cast<double>(screen.size()));
  };
  {
    OpTiming load(mxfp4, decode, 1, {TimingMode::kKernel, false});
    wall_per_config_us(load);  // modules loaded, outside the figures
  }
  OpTiming fresh(mxfp4, decode, 1, {TimingMode::kKernel, false});
  const auto synced = wall_per_config_us(fresh);
  OpTiming recorded(mxfp4, decode, 1, {TimingMode::kKernel, false});
  std::FILE* log = std::tmpfile();
  recorded.on_new_config([log](const std::string& config) {
    std::fprintf(log, "{\"record\": \"timing\", \"config\": \"%s\"}\n", config.c_str());
    std::fflush(log);
  });
  const auto with_records = wall_per_config_us(recorded);
  const auto ran = wall_per_config_us(recorded);
  std::fclose(log);
  std::printf(
      "\nThe screen of %zu mxfp4_gemm decode configs (M=8 N=K=4096; a warmup and a timed run each, one batch):\n",
      screen.size() / 2);
  std::printf("%-52s %16s %16s\n", "", "wall us/config", "kernel us/config");
  std::printf("%-52s %16.2f %16.2f\n", "new configs (first runs synchronised)", synced.first, synced.second);
  std::printf("%-52s %16.2f %16.2f\n", "new configs, and a watchdog record each", with_records.first,
              with_records.second);
  std::printf("%-52s %16.2f %16.2f\n", "configs that ran (no synchronisation)", ran.first, ran.second);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int crosscheck_runs = 0;
  int sweep_runs = 0;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--sweep-harness=", 16) == 0) {
      sweep_runs = std::atoi(argv[i] + 16);
      if (sweep_runs <= 0) {
        std::cerr << "perf_harness: --sweep-harness='" << (argv[i] + 16) << "': expected a positive run count\n";
        return 2;
      }
    } else if (std::strncmp(argv[i], "--crosscheck=", 13) == 0) {
      crosscheck_runs = std::atoi(argv[i] + 13);
      if (crosscheck_runs <= 0) {
        std::cerr << "perf_harness: --crosscheck='" << (argv[i] + 13) << "': expected a positive run count\n";
        return 2;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  const auto probe = probe_gpus();
  if (!probe.available()) {
    std::cerr << "perf_harness: no CUDA device (" << probe.reason << ")\n";
    return 1;
  }
  TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
  const DeviceInfo device = query_device(0);
  if (crosscheck_runs > 0) return crosscheck(crosscheck_runs, device);
  if (sweep_runs > 0) return sweep_harness(sweep_runs, device);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  std::string why;
  if (!CuptiTimer::available(&why)) {
    std::cerr << "perf_harness: CUPTI unavailable (" << why << ")\n";
    return 1;
  }

  // 1. Host overhead per iteration of an empty one-block kernel, per mode.
  const auto empty = std::make_shared<SpinOp>("spin_empty", 0);
  const double launch_us = bare_launch_us(*empty);
  std::map<std::string, std::string> family_mode;
  for (const auto& [mode_id, mode_name] : timing_mode_names()) {
    const std::string mode = mode_name;
    auto op = std::make_shared<SpinOp>("empty_" + mode, 0);
    for (const auto& f : make_families({op}, {ShapeSet{"harness", "", {}, {gemm_shape(1, 1, 1)}}})) {
      register_family(f, context_for(mode_id, device), std::make_shared<TimingLoopState>());
      family_mode[reported_name(f)] = mode;
    }
  }
  // 2. Whole benchmarks: spin kernels and mxfp4_gemm with one fixed config (no sweep).
  auto spin_context = context_for(TimingMode::kKernel, device);
  auto spin_loop = std::make_shared<TimingLoopState>();
  OpList spins = {std::make_shared<SpinOp>("spin_5us", 5'000), std::make_shared<SpinOp>("spin_20us", 20'000),
                  std::make_shared<SpinOp>("spin_100us", 100'000)};
  std::vector<std::string> whole;
  for (const auto& f : make_families(spins, {ShapeSet{"harness", "", {}, {gemm_shape(1, 1, 1)}}})) {
    register_family(f, spin_context, spin_loop);
    whole.push_back(reported_name(f));
  }
  auto mxfp4 = std::make_shared<Mxfp4GemmOp>(false);
  for (const std::int64_t m : {8, 512}) {
    const Shape s = gemm_shape(m, 4096, 4096);
    auto c = context_for(TimingMode::kKernel, device);
    c->tune.only = {mxfp4->default_config(s, device)};
    auto loop = std::make_shared<TimingLoopState>();
    for (const auto& f : make_families({mxfp4}, {ShapeSet{"harness", "", {}, {s}}})) {
      register_family(f, c, loop);
      whole.push_back(reported_name(f));
    }
  }

  // The fixed start-up of a whole benchmark: preparing its inputs and one untimed run.
  std::map<std::string, double> startup_s;
  for (const auto& name : whole) {
    const bool gemm = name.rfind("mxfp4_gemm", 0) == 0;
    const Op& op = gemm ? static_cast<const Op&>(*mxfp4)
                        : *spins[name.rfind("spin_5us", 0) == 0    ? 0
                                 : name.rfind("spin_20us", 0) == 0 ? 1
                                                                   : 2];
    const Shape s =
        gemm ? gemm_shape(name.find("M:8/") != std::string::npos ? 8 : 512, 4096, 4096) : gemm_shape(1, 1, 1);
    const Config c = gemm ? mxfp4->default_config(s, device) : op.config_space(SpaceKind::kDefault)[0];
    const auto t0 = clock_type::now();
    {
      OpTiming timing(op, s, 0, {TimingMode::kKernel, false});
      timing.warm(c);
    }
    startup_s[name] = std::chrono::duration<double>(clock_type::now() - t0).count();
  }

  Keep keep;
  std::map<std::string, double> wall_s;
  for (const auto& [name, mode] : family_mode) benchmark::RunSpecifiedBenchmarks(&keep, "^" + name + "$");
  for (const auto& name : whole) {
    const auto t0 = clock_type::now();
    benchmark::RunSpecifiedBenchmarks(&keep, "^" + name + "$");
    wall_s[name] = std::chrono::duration<double>(clock_type::now() - t0).count();
  }

  std::printf("\nHost overhead per iteration (empty one-block kernel; bare cudaLaunchKernel %.2f us):\n", launch_us);
  std::printf("%-10s %14s %18s\n", "mode", "kernel time us", "host CPU us/iter");
  for (const auto& [name, mode] : family_mode) {
    const auto& r = keep.last.at(name);
    std::printf("%-10s %14.2f %18.2f\n", mode.c_str(),
                r.real_accumulated_time / static_cast<double>(r.iterations) * 1e6,
                r.cpu_accumulated_time / static_cast<double>(r.iterations) * 1e6);
  }
  std::printf("\nWhole benchmarks at min_time %s (measured = iterations x reported time of the final run):\n",
              "default");
  std::printf("%-52s %10s %10s %8s %10s %14s\n", "benchmark", "iterations", "measured s", "wall s", "start-up s",
              "(wall-start-up)/measured");
  for (const auto& name : whole) {
    const auto& r = keep.last.at(name);
    const double measured = r.real_accumulated_time;
    std::printf("%-52s %10lld %10.3f %8.3f %10.3f %14.2f\n", name.c_str(), static_cast<long long>(r.iterations),
                measured, wall_s[name], startup_s[name], (wall_s[name] - startup_s[name]) / measured);
  }
  benchmark::ClearRegisteredBenchmarks();  // frees the workloads while CUDA is still up
  return 0;
}
