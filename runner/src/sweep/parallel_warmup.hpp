#pragma once
// The parallel warmup: the autotune sweep of every selected, untuned key, sharded over N GPUs
// as child processes of the same binary, before Google Benchmark's serial timing loop.

#include <string>
#include <vector>

#include "plan/family.hpp"

namespace tunebench {

/// PARALLEL_WARMUP_GPUS: unset, empty or "1" give 1 (no sharding: the hook stays installed and
/// does nothing); N from 2 to 9999 gives N. "0", a larger or negative value, or anything not
/// a plain decimal throws std::invalid_argument naming the variable and the range.
int warmup_gpus_from_env();

/// Seconds without progress after which a sweep's child process counts as hung and is killed:
/// TUNEBENCH_HANG_TIMEOUT, default 300 (a step is one config's runs, or the parallel compilation
/// before a key's sweep). Throws std::invalid_argument unless the value is plain decimal
/// seconds from 1 to 1e6.
double hang_timeout_s();

/// The caller's CUDA_VISIBLE_DEVICES entries, as opaque tokens (integers, GPU-UUIDs, MIG ids
/// are passed on as written; nothing is parsed as a number). Unset: "0" .. "device_count-1".
/// An empty entry throws std::invalid_argument.
std::vector<std::string> device_tokens(const char* visible_devices, int device_count);

/// The devices of shards 0 .. n-1: the first n of `tokens` (device_tokens). Entries past the
/// n-th are not used, so they are not looked at. Throws std::invalid_argument, one line, when
/// fewer than n are given or two of the first n are the same entry (two shards would share one
/// GPU). `visible` is CUDA_VISIBLE_DEVICES as set (null: unset), for the message only.
std::vector<std::string> shard_devices(const std::vector<std::string>& tokens, int n, const char* visible);

/// Which keys each shard tunes. Keys are dealt largest cost first to the least-loaded shard
/// (longest-processing-time scheduling); then a `trust_share` of the keys (rounded, at least one
/// when n >= 2 and trust_share > 0, at most half of them), spread over the cheaper half by cost,
/// is dealt again to a second, different shard, so that disagreement between shards can be
/// counted without costing a tenth more sweep.
struct ShardPlan {
  std::vector<std::vector<std::size_t>> shards;  ///< key indices per shard
  std::vector<std::size_t> doubled;              ///< keys tuned on two shards
};
ShardPlan plan_shards(const std::vector<double>& costs, int n, double trust_share = 0.1);

/// Estimated seconds to sweep `shape` over `configs` configs with `options`, for planning: each
/// config gets options.warmup untimed runs and as many timed runs as fit budget_per_config
/// (between min_ and max_repetitions), a run lasting its roofline time at `peak_flops` FLOP/s
/// and `peak_bytes_per_s` B/s (Op::flops, Op::bytes) plus `per_run_s` of host overhead, and each
/// config costs `per_config_s` more (compile load, launch set-up). Not a prediction of the wall
/// time, a weight that keeps cheap keys from counting as free.
double sweep_cost_s(double flops, double bytes, int configs, const TuneOptions& options, double peak_flops,
                    double peak_bytes_per_s, double per_run_s = 100e-6, double per_config_s = 5e-3);

/// What a warmup did.
struct WarmupReport {
  int keys = 0;             ///< keys to tune (deduplicated by cache key)
  int shards = 0;
  int tuned = 0;            ///< keys the shards finished
  int crashed_shards = 0;   ///< children that died or failed; their keys are tuned serially later
  std::vector<std::string> disagreeing;  ///< doubled keys whose winners differed (families)
  double seconds = 0;       ///< wall time of the sweep
  /// Per shard: keys finished, seconds spent tuning them (as the shard timed each key) and
  /// seconds from its start to its exit. wall - tuning is the shard's start-up and idle time.
  struct Shard {
    int keys = 0;
    double tuning_s = 0;
    double wall_s = 0;
  };
  std::vector<Shard> per_shard;  ///< of the first round
};

/// Runs the warmup: writes each shard's family list, starts child i of `exe` with `args` plus
/// --tunebench_shard=i:<list> under CUDA_VISIBLE_DEVICES=tokens[i] and its own cache file, shows
/// progress on stderr (a live line on a terminal, a summary always), merges the shards' results
/// into context.cache in one transaction, re-times the contenders of each disagreeing key on
/// this process's GPU and keeps the faster. A child's stdout is discarded; its stderr lines are
/// prefixed "[shard i]". On SIGINT or SIGTERM the children are terminated (killed after 2 s),
/// all reaped, finished results merged, and the signal re-raised; a signal whose disposition is
/// SIG_IGN when the sweep starts (a background job of a non-interactive shell, nohup) is left
/// ignored. A child without progress
/// (neither a stderr line nor a change of its progress file) for TUNEBENCH_HANG_TIMEOUT seconds
/// (default 300; the clock waits while it reports compiling) is killed and reported with the
/// key and config it was on; that config is stored in context.cache as status timeout, and
/// the child counts in crashed_shards. Its scratch folder (tunebench-warmup-* under TMPDIR, else
/// /tmp) is removed however it ends. Throws std::invalid_argument when shard_devices refuses
/// `tokens`, for a bad TUNEBENCH_HANG_TIMEOUT, or when TMPDIR is not a writable folder.
WarmupReport parallel_warmup(const std::vector<const Family*>& untuned, RunContext& context, int n,
                             const std::vector<std::string>& tokens, const std::string& exe,
                             const std::vector<std::string>& args, double trust_share = 0.1);

/// The child side: tunes the families named (one per line) in `list_file` into context.cache,
/// writing "tunebench-shard: tuned <family> in <seconds> s" to stderr after each, and
/// "<family>\t<activity>" (TuneOptions::on_progress) to `list_file`.progress at every step, for
/// the parent's watchdog. Returns the exit status: 3
/// when a config left a sticky CUDA error (it is stored as launch_failed; the parent runs
/// another round for the keys left, in fresh processes that skip it).
/// For tests, TUNEBENCH_FAULT_INJECT="abort-shard=I" makes shard I abort after its first key
/// and "disagree-shard=I" makes it report a config outside the swept space as the winner;
/// "sticky-config=C" and "hang-config=C" make config C fail like an illegal address or never
/// return (runner/op_timing.cpp).
int run_shard(const std::vector<Family>& families, const RunContext& context, int shard,
              const std::string& list_file);

}  // namespace tunebench
