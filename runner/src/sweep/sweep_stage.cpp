#include "sweep/sweep_stage.hpp"

#include <cstdio>
#include <iostream>
#include <set>
#include <stdexcept>

#include "common/c_numbers.hpp"
#include "common/plural.hpp"
#include "plan/family.hpp"
#include "sweep/shard_plan.hpp"
#include "context/config_choice.hpp"

namespace tunebench {
namespace {


// A further round's figures added to the sweep's: the summary's per-shard lines then count what
// shard i did in every round, not in the first alone. Rounds re-plan, so shard i of a later
// round runs other keys, on the same device entry.
void add_round(SweepReport& w, const SweepReport& more) {
  w.tuned += more.tuned;
  w.crashed_shards += more.crashed_shards;
  w.seconds += more.seconds;
  w.compile_s += more.compile_s;
  w.runs += more.runs;
  w.kernel_s += more.kernel_s;
  w.dropped += more.dropped;
  w.worker_s += more.worker_s;
  w.retimed += more.retimed;
  w.changed += more.changed;
  if (w.per_shard.size() < more.per_shard.size()) w.per_shard.resize(more.per_shard.size());
  for (std::size_t i = 0; i < more.per_shard.size(); ++i) {
    auto& s = w.per_shard[i];
    s.keys += more.per_shard[i].keys;
    s.tuning_s += more.per_shard[i].tuning_s;
    s.wall_s += more.per_shard[i].wall_s;
    if (s.device.empty()) s.device = more.per_shard[i].device;
  }
}

// What the sweep cost: kernel time against the time its workers held the GPUs.
void print_cost(const SweepReport& w, const std::string& strategy) {
  char line[320];
  std::snprintf(line, sizeof line,
                "bench: sweep (%s): %.1f s kernel time in %.1f s of worker time (%.0f%% busy; %.1f s compiling "
                "before), %s, %s dropped early\n",
                strategy.c_str(), w.kernel_s, w.worker_s, 100 * w.busy(), w.compile_s,
                count_of(w.runs, "timed run", "timed runs").c_str(),
                count_of(w.dropped, "config", "configs").c_str());
  std::cerr << line;
}

void print_report(const SweepExecutor& executor, const SweepReport& w, bool isolated) {
  const std::string seconds = format_c("%.1f", w.seconds);
  if (isolated) {
    std::cerr << "bench: isolated sweep: " << count_of(w.keys, "key", "keys") << " in a child process in " << seconds
              << " s, " << w.tuned << " tuned, " << count_of(w.crashed_shards, "child process", "child processes")
              << " failed\n";
    return;
  }
  const bool ranks = executor.name() == "MPI sweep";
  std::cerr << "bench: " << executor.name() << ": " << count_of(w.keys, "key", "keys") << " on "
            << count_of(w.shards, ranks ? "rank" : "shard", ranks ? "ranks" : "shards") << " in " << seconds << " s, "
            << w.tuned << " tuned, "
            << count_of(w.crashed_shards, ranks ? "worker" : "shard", ranks ? "workers" : "shards") << " failed, "
            << count_of(static_cast<long long>(w.disagreeing.size()), "disagreement", "disagreements") << "\n";
  for (std::size_t i = 0; i < w.per_shard.size(); ++i) {
    char line[160];
    std::snprintf(line, sizeof line, "bench: %s %zu: %s, %.1f s tuning in %.1f s\n",
                  executor.name() == "MPI sweep" ? "MPI sweep rank" : "parallel warmup shard", i,
                  count_of(w.per_shard[i].keys, "key", "keys").c_str(), w.per_shard[i].tuning_s, w.per_shard[i].wall_s);
    std::cerr << line;
  }
  if (w.retimed > 0) {
    std::cerr << "bench: " << executor.name() << ": " << count_of(w.retimed, "key", "keys")
              << " re-timed on the measurement GPU (finalists interleaved), "
              << count_of(w.changed, "winner", "winners") << " changed\n";
  }
  // Left in the plural at a count of one: tests/parallel_warmup_test.sh matches "WARNING: 1 keys
  // got different winners" as it has always read.
  if (!w.disagreeing.empty()) {
    std::string list;
    for (const auto& name : w.disagreeing) list += (list.empty() ? "" : " ") + name;
    std::cerr << "bench: WARNING: " << w.disagreeing.size() << " keys got different winners on two shards "
              << "(re-timed on the measurement GPU): " << list << "\n";
  }
}

}  // namespace

// The children's results reach the run only through the cache: refuse before any sweep starts
// rather than lose the sweep at the merge.
void check_results_can_be_stored(const std::vector<const Family*>& untuned, const RunContext& context, const std::string& what) {
  if (!context.cache || !context.cache->read_only() || untuned.empty()) return;
  std::set<cache::Key> keys;
  for (const Family* f : untuned) keys.insert(cache_key(*f->op, f->shape, context));
  throw std::invalid_argument("config cache " + context.cache->path().string() + " is read-only, and " +
                              count_of(static_cast<long long>(keys.size()), "key needs", "keys need") +
                              " tuning that the " + what +
                              " could not store: point TUNEBENCH_CACHE or --tunebench_cache at a writable file");
}

std::vector<const Family*> untuned_families(const std::vector<Family>& families, const BenchmarkFilter& filter,
                                            const RunContext& context, const ChoiceLog& choices) {
  std::vector<const Family*> untuned;
  for (const auto& f : families) {
    if (!filter.selects(reported_name(f)) || (f.op->needs_gpu() && !context.gpu_available)) continue;
    // A replayed benchmark runs its recorded config without tuning: sweeping its key would
    // cost the whole sweep for a result nobody reads.
    if (context.replay.count(f.name)) continue;
    // Tuned in this run but not stored (a busy cache): not to be swept again.
    if (choices.unstored(cache_key(*f.op, f.shape, context))) continue;
    if (!cached_config(f, context)) untuned.push_back(&f);
  }
  return untuned;
}

std::unique_ptr<SweepExecutor> choose_executor(const Settings& settings, const std::vector<const Family*>& untuned,
                                               const GpuProbe& gpu, ChildLaunch launch) {
  const char* visible = settings.visible_devices ? settings.visible_devices->c_str() : nullptr;
  if (settings.warmup_gpus >= 2) {
    return std::make_unique<ChildProcessExecutor>(settings.warmup_gpus, device_tokens(visible, gpu.count), false,
                                                  std::move(launch), settings);
  }
  bool isolate = false;
  if (settings.isolate_sweep != IsolateSweep::kNever) {
    for (const Family* f : untuned) isolate |= f->op->needs_gpu() || settings.isolate_sweep == IsolateSweep::kAlways;
  }
  if (!isolate) return std::make_unique<InProcessExecutor>();
  auto tokens = device_tokens(visible, gpu.count);
  if (tokens.size() > 1) tokens.resize(1);
  // No device: host ops only. The caller's "-1" (or empty) value is passed on, so that the child
  // sees no GPU either.
  if (tokens.empty()) tokens.push_back(visible ? visible : "0");
  return std::make_unique<ChildProcessExecutor>(1, std::move(tokens), true, std::move(launch), settings);
}

SweepReport run_sweep_stage(SweepExecutor& executor, const std::vector<const Family*>& untuned,
                            const std::vector<Family>& families, const BenchmarkFilter& filter, RunContext& context,
                            ChoiceLog& choices, const Settings& settings) {
  if (!executor.sweeps_up_front()) return {};
  const auto& to_sweep = untuned;
  SweepReport w = executor.sweep(untuned, context, choices, true);
  // Keys a crashed worker left get further rounds in fresh processes, as long as each round
  // finishes some (a crash after a sticky error stored it: that is progress too).
  bool progress = w.tuned > 0 || w.crashed_shards > 0;
  for (int round = 1; round < 8 && progress; ++round) {
    const auto left = untuned_families(families, filter, context, choices);
    if (left.empty()) break;
    std::cerr << "bench: " << executor.name() << " round " << round + 1 << " for "
              << count_of(static_cast<long long>(left.size()), "key", "keys") << " left\n";
    const SweepReport more = executor.sweep(left, context, choices, false);
    add_round(w, more);
    progress = left.size() > untuned_families(families, filter, context, choices).size() || more.crashed_shards > 0;
  }
  for (const Family* f : to_sweep) {
    if (cached_config(*f, context)) context.swept.insert(f->name);
  }
  print_report(executor, w, executor.name() == "isolated sweep");
  if (w.keys > 0) print_cost(w, settings.sweep);
  return w;
}

}  // namespace tunebench
