// perf_mxfp4: the performance benchmark of the MXFP4 GPU ops against their BF16 baselines
// (cuBLASLt's GEMM for mxfp4_gemm, cuBLAS's grouped GEMM, bf16_moe, for mxfp4_moe) on the
// shipped shape sets. For every shape it times every default config of each
// op and prints the best, with GB/s against the measured device-to-device copy bandwidth, and
// beside mxfp4_gemm the read floor of its bytes (hbm_read: a plain read of as many bytes from
// cold HBM, the best of its configs), which says how much of the gap to the large-copy
// bandwidth the size alone costs.
//
// Timing: kernel-level, as bench times (runner/op_timing.hpp, "kernel" mode by default: the sum
// of a run's kernel durations from CUPTI, weights rotated through copies larger than 2x L2 as
// in the ops' run()); per config one warm run, then the median of 21 timed runs (5 for kernels
// over 200 us). --timing=cudagraph|event selects the other modes.
//
// usage: perf_mxfp4 [--tunebench_shapes=PATH] [--expanded] [--m=1,8,...] [--timing=MODE]
//                   [--op=NAME,...] [--config=ITEMS] [--each] [--resources] [set-name-substring ...]
//   --op      time only these ops (mxfp4_gemm, mxfp4_moe, bf16_gemm, bf16_moe, hbm_read); the others
//             print "-"
//   --config  time only the configs holding every item, NAME=V or NAME (e.g. DECODE=1,WARPS_K=4);
//             an op none of whose configs qualify prints "-"
//   --each    also print one "config" line per timed config: op, set, gemm, M, us, GB/s, config
//   --resources  time nothing (no GPU needed): each selected config's kernels as ptxas -v gives
//             them through NVRTC for sm_90 (registers, spills, stack, static shared memory),
//             with the block's threads and the blocks an SM holds by registers

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bf16_gemm.hpp"
#include "bf16_moe.hpp"
#include "hbm_read.hpp"
#include "mxfp4_gpu.hpp"
#include "timing/op_timing.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/device.hpp"
#include "tunebench/nvrtc.hpp"
#include "tunebench/shape.hpp"

namespace {

using namespace tunebench;

// Timed runs per config; long kernels (prefill) get fewer so the sweep stays minutes.
constexpr int kRuns = 21, kLongRuns = 5;
constexpr double kLongSeconds = 200e-6;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per run of `config` (the median of the timed runs), or a negative value if it failed.
double time_config(const Op& op, OpTiming& timing, const Config& config) {
  try {
    timing.warm(config);  // compile, load, first touch
    const double first = std::chrono::duration<double>(timing.time_run(config)).count();
    std::vector<double> times{first};
    const int runs = first > kLongSeconds ? kLongRuns : kRuns;
    for (int r = 1; r < runs; ++r) times.push_back(std::chrono::duration<double>(timing.time_run(config)).count());
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

// One --config item: a parameter name, and the value it must have if one was given.
struct ConfigItem {
  std::string name;
  std::optional<long long> value;
};

struct Selection {
  std::vector<std::string> ops;    // empty: every op
  std::vector<ConfigItem> config;  // items a config must all hold; empty: every config
  bool each = false;
  bool wants(const Op& op) const { return ops.empty() || std::find(ops.begin(), ops.end(), op.name()) != ops.end(); }
  bool wants(const Config& c) const {
    return std::all_of(config.begin(), config.end(), [&](const ConfigItem& item) {
      return c.has(item.name) && (!item.value || c.get(item.name) == *item.value);
    });
  }
};

// "A=1,B" -> {"A=1", "B"}; "" -> {""}.
std::vector<std::string> split_items(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos <= s.size();) {
    const auto comma = std::min(s.find(',', pos), s.size());
    out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

// A whole decimal integer, or nothing.
std::optional<long long> parse_integer(const std::string& s) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

Best best_of(const Op& op, const Shape& shape, const DeviceInfo& dev, const TimingOptions& timing_options,
             SpaceKind space, const Selection& sel) {
  Best best;
  if (!sel.wants(op)) return best;
  std::vector<Config> configs;
  for (const auto& c : op.config_space(space)) {
    if (sel.wants(c) && op.can_implement(c, shape, dev)) configs.push_back(c);
  }
  if (configs.empty()) return best;  // nothing to time: skip the workload's preparation
  op.precompile(configs, dev, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  OpTiming timing(op, shape, 1, timing_options);
  for (const auto& c : configs) {
    const double t = time_config(op, timing, c);
    if (sel.each && t > 0) {
      std::printf("config %-10s %-18s %-4s %6lld %9.2f %7.0f  %s\n", op.name().c_str(), shape.set.c_str(),
                  shape.gemm.c_str(), static_cast<long long>(shape.m), t * 1e6, op.bytes(shape) / t / 1e9,
                  c.str().c_str());
    }
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

// --resources: what ptxas gives each kernel of every selected config of the MXFP4 ops, compiled
// for sm_90 through NVRTC as bench compiles it (plus -Xptxas=-v); no GPU needed. Returns the
// exit status: 1 when a config did not compile.
int print_resources(const Selection& sel, SpaceKind space, bool fold) {
  const KernelCompiler compiler(std::filesystem::path{});  // -v's log comes only from a compile
  const bench::Mxfp4GemmOp gemm(fold);
  const bench::Mxfp4MoeOp moe(fold);
  std::printf("%-10s %-5s %-20s %5s %12s %11s %6s %6s %8s %7s %13s %10s  %s\n", "op", "fold", "kernel", "regs",
              "spill stores", "spill loads", "stack", "smem", "dyn smem", "threads", "blocks/SM reg", "serialized",
              "config");
  int failed = 0;
  for (const bench::Mxfp4GpuOp* op :
       {static_cast<const bench::Mxfp4GpuOp*>(&gemm), static_cast<const bench::Mxfp4GpuOp*>(&moe)}) {
    if (!sel.wants(*op)) continue;
    for (const auto& c : op->config_space(space)) {
      if (!sel.wants(c)) continue;
      auto build = bench::mxfp4_jit_build(c, op->name() == "mxfp4_moe", fold, "sm_90");
      build.request.options.push_back("-Xptxas=-v");
      const auto r = compiler.compile(build.request);
      if (!r.ok) {
        std::cerr << "perf_mxfp4: " << op->name() << " [" << c.str()
                  << "] does not compile: " << r.log.substr(0, r.log.find('\n')) << "\n";
        ++failed;
        continue;
      }
      // ptxas waits for each wgmma before the next when it says so (C7512/C7514/C7515: "wgmma.mma_async
      // instructions are serialized"); only the GEMM kernel has wgmma.
      const bool serialized = r.log.find("are serialized") != std::string::npos;
      for (const auto& k : parse_ptxas_info(r.log)) {
        const int threads =
            k.kernel == "mxfp4_splitk_finish" ? bench::kMxfp4GridStrideThreads : bench::mxfp4_block_threads(c);
        int dynamic_smem = 0;  // what the launch asks for, beside ptxas's static figure
        for (const auto& jk : build.kernels) {
          if (jk.name == k.kernel) dynamic_smem = jk.dynamic_smem_bytes;
        }
        const bool gemm_kernel = k.kernel != "mxfp4_splitk_finish";
        std::printf("%-10s %-5d %-20s %5d %12lld %11lld %6lld %6lld %8d %7d %13d %10s  %s\n", op->name().c_str(),
                    fold ? 1 : 0, k.kernel.c_str(), k.registers, k.spill_store_bytes, k.spill_load_bytes,
                    k.stack_frame_bytes, k.static_smem_bytes, dynamic_smem, threads,
                    k.registers > 0 ? blocks_per_sm_by_registers(k.registers, threads) : 0,
                    gemm_kernel && serialized ? "wgmma" : "-", c.str().c_str());
      }
    }
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes = TUNEBENCH_SOURCE_SHAPES;
  std::vector<std::string> wanted;
  std::vector<long long> ms;
  SpaceKind space = SpaceKind::kDefault;
  TimingOptions timing;
  Selection sel;
  bool resources = false;
  const std::string usage_line =
      "usage: perf_mxfp4 [--tunebench_shapes=PATH] [--expanded] [--m=1,8,...] [--timing=MODE] [--op=NAME,...]"
      " [--config=NAME=V,...] [--each] [--resources] [set-name-substring ...]";
  const std::string usage = " (" + usage_line + ")\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--tunebench_shapes=", 0) == 0) {
      shapes = a.substr(19);
    } else if (a.rfind("--timing=", 0) == 0) {
      const auto mode = parse_timing_mode(a.substr(9));
      if (!mode) {
        std::cerr << "perf_mxfp4: " << a << ": expected " << timing_mode_choices() << "\n";
        return 2;
      }
      timing.mode = *mode;
    } else if (a == "--help" || a == "-h") {
      std::cout
          << usage_line << "\n"
          << "  --op      time only these ops (mxfp4_gemm, mxfp4_moe, bf16_gemm, bf16_moe, hbm_read)\n"
          << "  --config  time only the configs holding every item, NAME=V or NAME (e.g. DECODE=1,WARPS_K=4)\n"
          << "  --each    also print one line per timed config\n"
          << "  --resources  no timing and no GPU: registers, spills and shared memory (static, and the\n"
          << "            dynamic amount its launch asks for) of each selected config's kernels (NVRTC for sm_90,\n"
          << "            sm_90a for WGMMA=1 configs, with ptxas -v), and the blocks an SM holds by registers\n"
          << "  --expanded  the expanded config space; --timing=kernel|cudagraph|event; --m token counts;\n"
          << "  set-name-substring  only the shape sets whose name holds it (e.g. decode_ep)\n";
      return 0;
    } else if (a == "--resources") {
      resources = true;
    } else if (a == "--expanded") {
      space = SpaceKind::kExpanded;
    } else if (a == "--each") {
      sel.each = true;
    } else if (a.rfind("--config=", 0) == 0) {
      if (!sel.config.empty()) {
        std::cerr << "perf_mxfp4: " << a << ": --config given twice (list every NAME=V item in one)\n";
        return 2;
      }
      for (const auto& item : split_items(a.substr(9))) {
        const auto eq = item.find('=');
        ConfigItem parsed{item.substr(0, eq), std::nullopt};
        if (eq != std::string::npos) parsed.value = parse_integer(item.substr(eq + 1));
        if (parsed.name.empty() || (eq != std::string::npos && !parsed.value)) {
          std::cerr << "perf_mxfp4: " << a
                    << ": expected comma-separated NAME or NAME=integer items (e.g. DECODE=1,WARPS_K=4)\n";
          return 2;
        }
        sel.config.push_back(parsed);
      }
    } else if (a.rfind("--op=", 0) == 0) {
      for (const auto& name : split_items(a.substr(5))) {
        if (name != "mxfp4_gemm" && name != "mxfp4_moe" && name != "bf16_gemm" && name != "bf16_moe" &&
            name != "hbm_read") {
          std::cerr << "perf_mxfp4: " << a
                    << ": expected a comma-separated list of mxfp4_gemm, mxfp4_moe, bf16_gemm, bf16_moe, hbm_read\n";
          return 2;
        }
        sel.ops.push_back(name);
      }
    } else if (a.rfind("--m=", 0) == 0) {
      for (const auto& item : split_items(a.substr(4))) {
        const auto m = parse_integer(item);
        if (!m || *m <= 0) {
          std::cerr << "perf_mxfp4: " << a << ": expected a comma-separated list of positive token counts M\n";
          return 2;
        }
        ms.push_back(*m);
      }
    } else if (a.rfind("--", 0) == 0) {
      std::cerr << "perf_mxfp4: unknown flag " << a << usage;
      return 2;
    } else {
      wanted.push_back(a);
    }
  }
  // Checked before anything runs: a bad value is a usage error, as in bench.
  bool fold = false;
  try {
    fold = bench::foldscale_from_env();
  } catch (const std::invalid_argument& e) {
    std::cerr << "perf_mxfp4: " << e.what() << "\n";
    return 2;
  }
  if (resources) {
    for (const auto& name : sel.ops) {
      if (name != "mxfp4_gemm" && name != "mxfp4_moe") {
        std::cerr << "perf_mxfp4: --resources: --op=" << name
                  << ": expected mxfp4_gemm or mxfp4_moe (the ops compiled here)\n";
        return 2;
      }
    }
  }
  // --config selects among the configs of the MXFP4 ops and bf16_gemm (bf16_moe and hbm_read
  // always take their best); one that none of the selected ones holds in the chosen space
  // would time (or list) nothing of them.
  const bool config_applies = sel.ops.empty() || std::any_of(sel.ops.begin(), sel.ops.end(), [](const std::string& n) {
                                return n == "mxfp4_gemm" || n == "mxfp4_moe" || n == "bf16_gemm";
                              });
  if (!sel.config.empty() && config_applies) {
    const bench::Mxfp4GemmOp gemm(fold);
    const bench::Mxfp4MoeOp moe(fold);
    const bench::Bf16GemmOp bf16;
    bool any = false;
    std::string names;
    for (const Op* op : {static_cast<const Op*>(&gemm), static_cast<const Op*>(&moe), static_cast<const Op*>(&bf16)}) {
      if (!sel.wants(*op) || (resources && op == &bf16)) continue;
      names += (names.empty() ? "" : ", ") + op->name();
      for (const auto& c : op->config_space(space)) any = any || sel.wants(c);
    }
    if (!any) {
      std::string items;
      for (const auto& item : sel.config) {
        items += (items.empty() ? "" : ",") + item.name + (item.value ? "=" + std::to_string(*item.value) : "");
      }
      std::cerr << "perf_mxfp4: --config=" << items << ": no config of "
                << (names.empty() ? std::string("the selected ops") : names) << " in the "
                << (space == SpaceKind::kExpanded ? "expanded space"
                                                  : "default space (--expanded for the expanded one)")
                << " holds every item; perf_mxfp4 --resources [--expanded] lists them\n";
      return 2;
    }
  }
  try {
    if (resources) return print_resources(sel, space, fold);
    const auto probe = probe_gpus();
    if (!probe.available()) {
      std::cerr << "perf_mxfp4: no CUDA device (" << probe.reason << ")\n";
      return 1;
    }
    TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
    const DeviceInfo dev = query_device(0);
    Stream stream;
    const double copy_bw = copy_bandwidth(stream.get());
    std::printf("device: %s (%d SMs); device-to-device copy %.0f GB/s (read + write); FOLDSCALE=%d; timing %s\n",
                dev.name.c_str(), dev.sm_count, copy_bw / 1e9, fold ? 1 : 0, timing_name(timing).c_str());
    std::printf("%-18s %-4s %6s | %9s %7s %5s | %9s %5s | %9s %7s %5s | %9s %7s | %7s | %9s %7s | %7s  %s\n", "set",
                "gemm", "M", "gemm us", "GB/s", "%copy", "read us", "%copy", "moe us", "GB/s", "%copy", "bf16 us",
                "TFLOP/s", "gemm x", "bf16moe", "TFLOP/s", "moe x", "best configs");
    const auto gemm_op = std::make_shared<const bench::Mxfp4GemmOp>(fold);
    const bench::Mxfp4GemmOp& gemm = *gemm_op;
    const bench::HbmReadOp read(gemm_op);
    const bench::Mxfp4MoeOp moe(fold);
    const bench::Bf16GemmOp bf16;
    const bench::Bf16MoeOp bf16_moe;
    for (const auto& set : load_shape_path(shapes)) {
      if (!wanted.empty() && std::none_of(wanted.begin(), wanted.end(), [&](const std::string& w) {
            return set.name.find(w) != std::string::npos;
          })) {
        continue;
      }
      // bench checks each op's shape rules when it makes families; perf_mxfp4 times the ops
      // directly, so it checks them here: a bad K stops it, a set without `moe:` has no moe column.
      for (const Op* op : {static_cast<const Op*>(&gemm), static_cast<const Op*>(&bf16)}) {
        check_shape_rules(set, op->shape_rules());
      }
      const bool moe_runs = check_shape_rules(set, moe.shape_rules());
      for (const auto& s : set.shapes) {
        if (!ms.empty() && std::find(ms.begin(), ms.end(), s.m) == ms.end()) continue;
        const Best g = best_of(gemm, s, dev, timing, space, sel);
        const Best m = moe_runs ? best_of(moe, s, dev, timing, space, sel) : Best{};
        // --config names the MXFP4 ops' parameters: the read floor always takes its best config.
        Selection read_sel = sel;
        read_sel.config.clear();
        const Best r = best_of(read, s, dev, timing, SpaceKind::kDefault, read_sel);
        const Best b = best_of(bf16, s, dev, timing, SpaceKind::kDefault, sel);
        // --config names the MXFP4 ops' parameters, as for the read floor.
        const Best bm = moe_runs ? best_of(bf16_moe, s, dev, timing, SpaceKind::kDefault, read_sel) : Best{};
        // "-" for an op not selected or without a config that ran.
        auto cols = [&](const Op& op, const Best& x) {
          char buf[64];
          if (x.seconds <= 0) {
            std::snprintf(buf, sizeof buf, "%9s %7s %5s", "-", "-", "-");
          } else {
            std::snprintf(buf, sizeof buf, "%9.2f %7.0f %5.1f", x.seconds * 1e6, op.bytes(s) / x.seconds / 1e9,
                          100 * op.bytes(s) / x.seconds / copy_bw);
          }
          return std::string(buf);
        };
        // A baseline's time and TFLOP/s, and the op's speedup over it (baseline time / op time).
        auto base_cols = [](const Op& base, const Shape& shape, const Best& x, const Best& op_best) {
          char buf[64];
          if (x.seconds > 0) {
            std::snprintf(buf, sizeof buf, "%9.2f %7.1f | ", x.seconds * 1e6, base.flops(shape) / x.seconds / 1e12);
          } else {
            std::snprintf(buf, sizeof buf, "%9s %7s | ", "-", "-");
          }
          std::string out = buf;
          if (x.seconds > 0 && op_best.seconds > 0) {
            std::snprintf(buf, sizeof buf, "%7.2f", x.seconds / op_best.seconds);
          } else {
            std::snprintf(buf, sizeof buf, "%7s", "-");
          }
          return out + buf;
        };
        char rcol[32];
        if (r.seconds > 0) {
          std::snprintf(rcol, sizeof rcol, "%9.2f %5.1f", r.seconds * 1e6, 100 * read.bytes(s) / r.seconds / copy_bw);
        } else {
          std::snprintf(rcol, sizeof rcol, "%9s %5s", "-", "-");
        }
        std::printf("%-18s %-4s %6lld | %s | %s | %s | %s | %s  %s ; %s ; %s ; %s\n", s.set.c_str(), s.gemm.c_str(),
                    static_cast<long long>(s.m), cols(gemm, g).c_str(), rcol, cols(moe, m).c_str(),
                    base_cols(bf16, s, b, g).c_str(), base_cols(bf16_moe, s, bm, m).c_str(),
                    g.config.empty() ? "-" : g.config.c_str(), m.config.empty() ? "-" : m.config.c_str(),
                    b.config.empty() ? "-" : b.config.c_str(), bm.config.empty() ? "-" : bm.config.c_str());
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "perf_mxfp4: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
