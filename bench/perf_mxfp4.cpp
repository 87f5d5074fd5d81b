// perf_mxfp4: the performance benchmark of the MXFP4 GPU ops against the cuBLASLt BF16
// baseline on the shipped shape sets. For every shape it times every default config of each
// op and prints the best, with GB/s against the measured device-to-device copy bandwidth.
//
// Timing: each config runs 20 times inside one CUDA graph (weights rotated as in the ops'
// run()), the graph is replayed 7 times, and the median replay time / 20 is reported. That
// removes host launch overhead but keeps the small gaps between graph kernels, so it slightly
// overstates microsecond kernels.
//
// usage: perf_mxfp4 [--tunebench_shapes=PATH] [--expanded] [--m=1,8,...] [set-name-substring ...]

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bf16_gemm.hpp"
#include "mxfp4_gpu.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/device.hpp"
#include "tunebench/shape.hpp"

namespace {

using namespace tunebench;

// Runs per graph and replays; long kernels (prefill) get fewer so the sweep stays minutes.
constexpr int kRunsPerGraph = 20, kReplays = 7, kLongRuns = 3, kLongReplays = 3;
constexpr double kLongSeconds = 200e-6;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per run of `op` with `config`, or a negative value if it failed.
double time_config(const Op& op, Workload& work, const Config& config, cudaStream_t stream) {
  try {
    op.run(work, config, stream);  // compile, load, first-touch outside the graph
    TUNEBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    Event start, stop;
    TUNEBENCH_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    op.run(work, config, stream);
    TUNEBENCH_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    TUNEBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float first_ms = 0;
    TUNEBENCH_CUDA_CHECK(cudaEventElapsedTime(&first_ms, start.get(), stop.get()));
    const bool long_kernel = first_ms * 1e-3 > kLongSeconds;
    const int runs = long_kernel ? kLongRuns : kRunsPerGraph, replays = long_kernel ? kLongReplays : kReplays;
    cudaGraph_t graph = nullptr;
    TUNEBENCH_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      for (int i = 0; i < runs; ++i) op.run(work, config, stream);
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);  // leave the stream usable for the next config
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    TUNEBENCH_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    TUNEBENCH_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    std::vector<double> times;
    TUNEBENCH_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // warm
    for (int r = 0; r < replays; ++r) {
      TUNEBENCH_CUDA_CHECK(cudaEventRecord(start.get(), stream));
      TUNEBENCH_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      TUNEBENCH_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
      TUNEBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
      float ms = 0;
      TUNEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      times.push_back(ms * 1e-3 / runs);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return median(times);
  } catch (const CudaError& e) {
    if (e.sticky()) throw;
    std::cerr << op.name() << " [" << config.str() << "]: " << e.what() << "\n";
    return -1;
  } catch (const std::exception& e) {
    std::cerr << op.name() << " [" << config.str() << "]: " << e.what() << "\n";
    return -1;
  }
}

struct Best {
  double seconds = -1;
  std::string config;
};

Best best_of(const Op& op, const Shape& shape, const DeviceInfo& dev, cudaStream_t stream, SpaceKind space) {
  auto work = op.prepare(shape, 1);
  Best best;
  for (const auto& c : op.config_space(space)) {
    if (!op.can_implement(c, shape, dev)) continue;
    const double t = time_config(op, *work, c, stream);
    if (t > 0 && (best.seconds < 0 || t < best.seconds)) best = {t, c.str()};
  }
  return best;
}

double copy_bandwidth(cudaStream_t stream) {
  const std::size_t bytes = std::size_t{2} << 30;
  DeviceBuffer a(bytes), b(bytes);
  TUNEBENCH_CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, stream));
  Event start, stop;
  std::vector<double> bw;
  for (int i = 0; i < 5; ++i) {
    TUNEBENCH_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    TUNEBENCH_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, stream));
    TUNEBENCH_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    TUNEBENCH_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    TUNEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    bw.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3));
  }
  return median(bw);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = TUNEBENCH_SOURCE_SHAPES;
  std::vector<std::string> wanted;
  std::vector<long long> ms;
  SpaceKind space = SpaceKind::kDefault;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--tunebench_shapes=", 0) == 0) {
      shapes = a.substr(19);
    } else if (a == "--expanded") {
      space = SpaceKind::kExpanded;
    } else if (a.rfind("--m=", 0) == 0) {
      for (std::size_t pos = 4; pos <= a.size();) {
        const auto comma = std::min(a.find(',', pos), a.size());
        const std::string item = a.substr(pos, comma - pos);
        long long m = 0;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), m);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size() || m <= 0) {
          std::cerr << "perf_mxfp4: " << a << ": expected a comma-separated list of positive token counts M\n";
          return 2;
        }
        ms.push_back(m);
        pos = comma + 1;
      }
    } else if (a.rfind("--", 0) == 0) {
      std::cerr << "perf_mxfp4: unknown flag " << a
                << " (usage: perf_mxfp4 [--tunebench_shapes=PATH] [--expanded] [--m=1,8,...] [set-name-substring ...])\n";
      return 2;
    } else {
      wanted.push_back(a);
    }
  }
  try {
    const auto probe = probe_gpus();
    if (!probe.available()) {
      std::cerr << "perf_mxfp4: no CUDA device (" << probe.reason << ")\n";
      return 1;
    }
    TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
    const DeviceInfo dev = query_device(0);
    Stream stream;
    const double copy_bw = copy_bandwidth(stream.get());
    const bool fold = bench::foldscale_from_env();
    std::printf("device: %s (%d SMs); device-to-device copy %.0f GB/s (read + write); FOLDSCALE=%d\n",
                dev.name.c_str(), dev.sm_count, copy_bw / 1e9, fold ? 1 : 0);
    std::printf("%-18s %-4s %6s | %9s %7s %5s | %9s %7s %5s | %9s %7s | %7s  %s\n", "set", "gemm", "M",
                "gemm us", "GB/s", "%copy", "moe us", "GB/s", "%copy", "bf16 us", "TFLOP/s", "gemm x", "best configs");
    const bench::Mxfp4GemmOp gemm(fold);
    const bench::Mxfp4MoeOp moe(fold);
    const bench::Bf16GemmOp bf16;
    for (const auto& set : load_shape_path(shapes)) {
      if (!wanted.empty() && std::none_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
            return set.name.find(w) != std::string::npos;
          })) {
        continue;
      }
      for (const auto& s : set.shapes) {
        if (!ms.empty() && std::find(ms.begin(), ms.end(), s.m) == ms.end()) continue;
        const Best g = best_of(gemm, s, dev, stream.get(), space);
        const Best m = best_of(moe, s, dev, stream.get(), space);
        const Best b = best_of(bf16, s, dev, stream.get(), SpaceKind::kDefault);
        auto us = [](const Best& x) { return x.seconds * 1e6; };
        std::printf("%-18s %-4s %6lld | %9.2f %7.0f %5.1f | %9.2f %7.0f %5.1f | %9.2f %7.1f | %7.2f  %s ; %s ; %s\n",
                    s.set.c_str(), s.gemm.c_str(), static_cast<long long>(s.m), us(g),
                    gemm.bytes(s) / g.seconds / 1e9, 100 * gemm.bytes(s) / g.seconds / copy_bw, us(m),
                    moe.bytes(s) / m.seconds / 1e9, 100 * moe.bytes(s) / m.seconds / copy_bw, us(b),
                    bf16.flops(s) / b.seconds / 1e12, b.seconds / g.seconds, g.config.c_str(),
                    m.config.c_str(), b.config.c_str());
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "perf_mxfp4: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
