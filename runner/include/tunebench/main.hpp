#pragma once
// The bench entry point, usable by any project that registers its own ops:
//
//     int main(int argc, char** argv) { return tunebench::run_benchmarks(argc, argv, my_ops()); }

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tunebench/op.hpp"

namespace tunebench {

/// tunebench's own command-line flags and environment, read before Google Benchmark's.
struct Options {
  /// Shape file or folder: --tunebench_shapes=PATH, else $TUNEBENCH_SHAPES, else
  /// `default_shapes` given to run_benchmarks.
  std::filesystem::path shapes;
  /// Input seed: --tunebench_seed=N, else $TUNEBENCH_SEED, else 0.
  std::uint64_t seed = 0;
  /// Config cache file: --tunebench_cache=FILE, else cache::default_cache_path()
  /// ($TUNEBENCH_CACHE, then the XDG cache folder). Empty here means that default.
  std::filesystem::path cache;
  /// USE_FLAGTUNE=1: autotune over the expanded config space (exhaustive search).
  SpaceKind space = SpaceKind::kDefault;
  /// GPU timing: --tunebench_timing=kernel|cudagraph|event, else $TUNEBENCH_TIMING, else
  /// "kernel" (see TimingOptions in op_timing.hpp).
  std::string timing = "kernel";
  /// Flush L2 before every timed run: --tunebench_cold_l2=0|1, else $TUNEBENCH_COLD_L2, else 0.
  bool cold_l2 = false;
  /// PARALLEL_WARMUP_GPUS (1: off). See parallel_warmup.hpp.
  int warmup_gpus = 1;
  /// Without the parallel warmup, where the sweep runs: TUNEBENCH_ISOLATE_SWEEP=auto (-1, the
  /// default: in a child process when a selected GPU key needs tuning, so a sticky CUDA error
  /// cannot take this process's GPU; in-process otherwise), 1 (always a child process), 0
  /// (always in-process).
  int isolate_sweep = -1;
  /// Where run directories are made: --tunebench_runs=DIR, else $TUNEBENCH_RUNS, else "runs".
  std::filesystem::path runs = "runs";
  /// REPLAY_FROM: a run directory whose configs this run replays exactly ("" records afresh).
  std::filesystem::path replay_from;
  /// Internal: --tunebench_shard=I:FILE makes this process shard I of a parallel warmup.
  int shard = -1;
  std::string shard_list;
};

/// Removes the --tunebench_* flags from argv (argc adjusted) and reads them and the
/// TUNEBENCH_* environment into Options. Throws std::invalid_argument with one line naming the
/// flag or variable and what was expected, for an unknown --tunebench_ flag or a bad value.
Options parse_options(int* argc, char** argv, const std::filesystem::path& default_shapes);

/// Runs bench: parses flags (Google Benchmark's and tunebench's), loads the shape sets,
/// registers every op x set x shape family and runs those --benchmark_filter selects, each with
/// its cached config, autotuned (and cached) before its timing loop when the cache has none.
/// Without --benchmark_filter it selects `default_filter_gpu` when a GPU is present and some op
/// needs one, else `default_filter_cpu`. Selected GPU families on a machine without a GPU are
/// reported in one line and end with SkipWithError (a failed benchmark is an entry with
/// error_occurred in the output, as in Google Benchmark). Returns the process exit status: 0
/// when benchmarks ran (or were listed), 1 when the filter matched none, 2 on bad input (shape
/// file, flag, environment), each failure with a one-line message on stderr.
int run_benchmarks(int argc, char** argv, const OpList& ops,
                   const std::filesystem::path& default_shapes,
                   const std::string& default_filter_gpu, const std::string& default_filter_cpu);

}  // namespace tunebench
