#pragma once
// Planning a sharded sweep: which devices the shards get and which keys each shard tunes.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/autotuner.hpp"

namespace tunebench {

/// The caller's CUDA_VISIBLE_DEVICES entries, as opaque tokens (integers, GPU-UUIDs, MIG ids
/// are passed on as written). Unset: "0" .. "device_count-1". CUDA stops enumerating at the
/// first invalid entry: from the first negative integer ("-1", CUDA's "no GPU") on, entries are
/// absent, so "-1" and "-1,0" give none and "6,-1,7" gives "6". An empty entry before that
/// throws std::invalid_argument.
std::vector<std::string> device_tokens(const char* visible_devices, int device_count);

/// The devices of shards 0 .. n-1: the first n of `tokens` (device_tokens). Entries past the
/// n-th are not used, so they are not looked at. Throws std::invalid_argument, one line, when
/// fewer than n are given or two of the first n are the same entry (two shards would share one
/// GPU). `visible` is CUDA_VISIBLE_DEVICES as set (null: unset), for the message only (which
/// says when a negative entry hid the devices).
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

/// Each shard's list reordered for the race's pruning (TuneOptions::prune_factor), which prunes a
/// key by the key with half its M once that one is tuned: within the shard, the keys of a group
/// (group[k]: one op and shape but for M; m[k] the key's M) take the positions the group had, from
/// the smallest M up. The shard's first key stays first: its screen, the longest of its group, is
/// what the compile pool's first configs are timed on while it compiles the rest of the op's.
void order_for_pruning(ShardPlan& plan, const std::vector<std::string>& group, const std::vector<std::int64_t>& m);

/// Which of `left` (a worker's keys not tuned yet, as indices into `group`, in its list's order) it
/// tunes next, as a position in `left`: the first whose configs are all compiled (`ready`) and
/// that no earlier key of `left` shares a pruning group with (group[k], as for
/// order_for_pruning: a group's keys stay in list order, so each finds the key with half its M
/// tuned); when none is, the first of `left`, whose configs the worker then waits for one by
/// one. So a worker tunes what the compile pool has finished while it compiles the rest, instead
/// of waiting at a key whose op's configs come later. `left` must not be empty.
std::size_t ready_key(const std::vector<std::size_t>& left, const std::vector<std::string>& group,
                      const std::function<bool(std::size_t)>& ready);

/// The keys of `plan` in the order its shards reach them, the order to compile them in: by the
/// estimated start of each (the summed costs of the keys before it in its shard's list; a doubled
/// key by its earlier start), a tie by the larger cost, then by the smaller index. For one shard
/// this is its list, largest cost first.
std::vector<std::size_t> reach_order(const ShardPlan& plan, const std::vector<double>& costs);

/// Estimated seconds to sweep `shape` over `configs` configs with `options`, for planning: each
/// config gets options.warmup untimed runs and as many timed runs as fit budget_per_config
/// (between min_ and max_repetitions), a run lasting its roofline time at `peak_flops` FLOP/s
/// and `peak_bytes_per_s` B/s (Op::flops, Op::bytes) plus `per_run_s` of host overhead, and each
/// config costs `per_config_s` more (compile load, launch set-up). Not a prediction of the wall
/// time, a weight that keeps cheap keys from counting as free.
double sweep_cost_s(double flops, double bytes, int configs, const TuneOptions& options, double peak_flops,
                    double peak_bytes_per_s, double per_run_s = 100e-6, double per_config_s = 5e-3);

}  // namespace tunebench
