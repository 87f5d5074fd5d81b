#pragma once
// The op interface: what tunebench needs from a kernel to register, tune and time it.
// Implement Op for a new kernel (see bench/cpu_mxfp4_gemm.hpp) and pass it to run_benchmarks().

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tunebench/config.hpp"
#include "tunebench/cuda.hpp"
#include "tunebench/shape.hpp"

namespace tunebench {

/// Which config space to enumerate: the default one (tens of configs; plain autotune) or the
/// expanded one (hundreds; exhaustive search).
enum class SpaceKind { kDefault, kExpanded };

/// Result of Op::check: the op's output on its workload against a reference.
struct CheckResult {
  double rel_error = 0;     ///< ||out - ref||_2 / ||ref||_2 over all outputs (float64)
  bool all_finite = true;   ///< false if any output is NaN or infinite (never a pass)
  std::size_t checked = 0;  ///< outputs compared
  /// True when finite and rel_error <= tolerance.
  bool passed(double tolerance) const { return all_finite && rel_error <= tolerance; }
};

/// The peak rates an op's roofline% counter is measured against on one device (0: unknown, no
/// counter): roofline% = 100 x max(flops / flops_peak, bytes / bytes_per_s) / time.
struct RooflinePeaks {
  double bytes_per_s = 0;  ///< memory bandwidth the op's bytes move at, bytes/s
  double flops = 0;        ///< arithmetic rate of the op's flops, FLOP/s
  std::string source;      ///< one line: where the figures come from (the JSON context says it)
};

/// The inputs, outputs and scratch an op needs for one shape, owned by the op's own subclass.
/// Created once per benchmark (outside the timed region) by Op::prepare.
class Workload {
 public:
  virtual ~Workload() = default;
  /// How many consecutive runs differ before they repeat: an op that keeps its weights cold by
  /// cycling through copies (or routings) returns the cycle length. CUDA-graph timing captures
  /// this many runs, one graph each, and replays them in turn, so a graph replay sees the same
  /// cold data an eager run does. Default 1: every run is the same.
  virtual std::size_t variants() const { return 1; }
};

/// A benchmarked operation. Implementations are immutable after construction and shared by all
/// benchmarks of their families; every method must be safe to call from the benchmark thread.
class Op {
 public:
  virtual ~Op() = default;

  /// First component of every benchmark name of this op, [a-z0-9_]+, e.g. "mxfp4_gemm".
  /// Host-timed ops start with "cpu_". Changing it breaks comparisons with earlier runs.
  virtual std::string name() const = 0;

  /// The one time unit all this op's benchmarks report in (compare.py drops entries whose unit
  /// differs from the first it reads).
  virtual benchmark::TimeUnit time_unit() const = 0;

  /// True when the op runs on a CUDA device; such benchmarks are skipped, with the reason, on a
  /// machine without one.
  virtual bool needs_gpu() const = 0;

  /// True when the op routes tokens over experts; its names then carry E and topk, and it has
  /// benchmarks only on shape sets with a `moe:` block (whatever shape_rules() says).
  virtual bool routed() const { return false; }

  /// What the op needs of a shape beyond the shape file's own rules: a K multiple (with the
  /// reason its error gives) and whether it needs the MoE geometry. make_families checks every
  /// set against it: a set without the geometry an op needs gives that op no benchmarks, a K
  /// that breaks its multiple stops the run with one line naming the file, the entry and its
  /// line (ShapeError; see check_shape_rules). Called once per op and set when families are
  /// made. The default asks for no K multiple and needs the MoE geometry exactly when routed().
  virtual ShapeRules shape_rules() const;

  /// Identifies the kernel code: tuned configs are cached per kernel version, so changing the
  /// kernel retunes. A hash of the kernel source, or a library's version for library ops.
  /// Compile-time variants an A/B compares (FOLDSCALE) are deliberately not part of it.
  virtual std::string kernel_version() const = 0;

  /// The shape's tuning key: shapes with equal keys share one tuned config. The default is the
  /// shape itself, tuning_key_for(shape, routed(), MBucket::kExact).
  virtual std::string tuning_key(const Shape& shape) const;

  /// The configs to consider, in a fixed order. Never empty for kDefault.
  virtual std::vector<Config> config_space(SpaceKind kind) const = 0;

  /// False when `config` cannot run `shape` on `device` (a tile that does not divide the
  /// problem, more shared memory or registers than the device has); such configs are skipped,
  /// never compiled or launched. Host ops ignore `device`.
  virtual bool can_implement(const Config& config, const Shape& shape, const DeviceInfo& device) const {
    (void)config;
    (void)shape;
    (void)device;
    return true;
  }

  /// The config used when nothing better is known: the first of the default space that
  /// can_implement the shape on `device`. Throws std::runtime_error if none can.
  Config default_config(const Shape& shape, const DeviceInfo& device) const;

  /// Prepares `configs` ahead of a sweep on up to `threads` host threads, for ops that compile
  /// per config (so a sweep's compilations run in parallel rather than one per timed config).
  /// Failures are left for run() to report. The default does nothing. Called from several
  /// threads at once (the sweep's compile pool compiles one config a call on every core), so an
  /// override must be thread-safe, as JitKernelCache::precompile is.
  virtual void precompile(const std::vector<Config>& configs, const DeviceInfo& device, int threads) const {
    (void)configs;
    (void)device;
    (void)threads;
  }

  /// Allocates and fills inputs for `shape` from `seed` (deterministic), on the current CUDA
  /// device for GPU ops. Not timed.
  virtual std::unique_ptr<Workload> prepare(const Shape& shape, std::uint64_t seed) const = 0;

  /// Runs the op once on `work` with `config`: GPU ops enqueue their kernels on `stream` and
  /// return; host ops ignore `stream` and return when the result is complete. Throws
  /// std::exception (with a one-line what(); CudaError for CUDA failures) on failure.
  virtual void run(Workload& work, const Config& config, cudaStream_t stream) const = 0;

  /// Runs the op once with `config` on `work` (output poisoned first) and compares the output
  /// with the op's reference. The default throws std::logic_error: the op has no reference.
  virtual CheckResult check(Workload& work, const Config& config, cudaStream_t stream) const;

  /// Floating-point operations of one run (2*M*N*K for a GEMM).
  virtual double flops(const Shape& shape) const = 0;

  /// Bytes one run must move at least (inputs read once, output written once).
  virtual double bytes(const Shape& shape) const = 0;

  /// The op a user would run instead of this one for the same shapes, by name() ("" for none):
  /// where both ran for a shape in one run, the latency table shows the baseline's p50 and the
  /// speedup (baseline p50 / this op's p50) in this op's row. A fact of the op's kind, like its
  /// roofline: mxfp4_gemm's is bf16_gemm (the same GEMM on BF16 weights through cuBLASLt).
  virtual std::string baseline() const { return ""; }

  /// The roofline of this op on `device`, for the roofline% counter of GPU ops. The default is
  /// unknown (no counter): the peaks are facts of the op's kind of work on a device, which the
  /// op knows (a BF16 tensor-core GEMM's rate is not an FP8 one's).
  virtual RooflinePeaks roofline_peaks(const DeviceInfo& device) const {
    (void)device;
    return {};
  }
};

using OpList = std::vector<std::shared_ptr<const Op>>;

/// How a tuning key rounds M, for ops whose best config changes slowly with the token count.
enum class MBucket {
  kExact,     ///< M itself
  kNextPow2,  ///< the next power of two >= M (1, 2, 4, ..., as triton_kernels buckets)
  kAlign32,   ///< M rounded up to a multiple of 32
};

/// M after bucketing (m > 0).
std::int64_t bucket_m(std::int64_t m, MBucket bucket);

/// "M=<bucketed m>,N=<n>,K=<k>", plus ",E=<experts>,topk=<top_k>" when `routed`.
std::string tuning_key_for(const Shape& shape, bool routed, MBucket bucket);

}  // namespace tunebench
