#include "sweep/sweep_stage.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <set>
#include <stdexcept>

#include "common/c_numbers.hpp"
#include "common/plural.hpp"
#include "context/config_choice.hpp"
#include "context/key_lease.hpp"
#include "plan/family.hpp"
#include "sweep/mpi/mpi_executor.hpp"
#include "sweep/mpi/mpi_session.hpp"
#include "sweep/shard_plan.hpp"

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
  w.compile_exposed_s += more.compile_exposed_s;
  w.runs += more.runs;
  w.kernel_s += more.kernel_s;
  w.dropped += more.dropped;
  w.pruned += more.pruned;
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

void add_context(const std::vector<ContextEntry>& entries) {
  for (const auto& e : entries) benchmark::AddCustomContext(e.name, e.value);
}

// What the sweep cost: kernel time against the time its workers held the GPUs.
void print_cost(const SweepReport& w, const std::string& strategy) {
  char line[400];
  std::snprintf(line, sizeof line,
                "bench: sweep (%s): %.1f s kernel time in %.1f s of worker time (%.0f%% busy; %.1f s compiling, "
                "%.1f s of worker time waiting for it), %s, %s dropped early, %d pruned\n",
                strategy.c_str(), w.kernel_s, w.worker_s, 100 * w.busy(), w.compile_s, w.compile_exposed_s,
                count_of(w.runs, "timed run", "timed runs").c_str(), count_of(w.dropped, "config", "configs").c_str(),
                w.pruned);
  std::cerr << line;
}

}  // namespace

// The children's results reach the run only through the cache: refuse before any sweep starts
// rather than lose the sweep at the merge.
void check_results_can_be_stored(const std::vector<const Family*>& untuned, const RunContext& context,
                                 const std::string& what) {
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

std::unique_ptr<SweepExecutor> choose_executor(const Settings& settings, const std::vector<Family>& families,
                                               const std::vector<const Family*>& untuned, const RunContext& context,
                                               const GpuProbe& gpu, ChildLaunch launch) {
  if (MpiSession* mpi = MpiSession::current()) {
    return std::make_unique<MpiExecutor>(*mpi, untuned, context, families, std::move(launch), settings);
  }
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

std::vector<ContextEntry> sweep_context(const SweepExecutor& executor, const SweepReport& w, const Settings& settings) {
  std::vector<ContextEntry> out{{"tunebench_sweep_strategy", settings.sweep}};
  if (!executor.sweeps_up_front()) return out;
  const std::vector<ContextEntry> figures{{"tunebench_sweep_seconds", c_number(w.seconds)},
                                          {"tunebench_sweep_compile_seconds", c_number(w.compile_s)},
                                          {"tunebench_sweep_compile_exposed_seconds", c_number(w.compile_exposed_s)},
                                          {"tunebench_sweep_kernel_seconds", c_number(w.kernel_s)},
                                          {"tunebench_sweep_worker_seconds", c_number(w.worker_s)},
                                          {"tunebench_sweep_busy_fraction", c_number(w.busy())},
                                          {"tunebench_sweep_timed_runs", std::to_string(w.runs)},
                                          {"tunebench_sweep_configs_dropped", std::to_string(w.dropped)},
                                          {"tunebench_sweep_configs_pruned", std::to_string(w.pruned)}};
  out.insert(out.end(), figures.begin(), figures.end());
  const auto own = executor.context_entries(w);
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

SweepReport run_sweep_stage(SweepExecutor& executor, const std::vector<const Family*>& untuned,
                            const std::vector<Family>& families, const BenchmarkFilter& filter, RunContext& context,
                            ChoiceLog& choices, const Settings& settings) {
  if (!executor.sweeps_up_front()) {
    add_context(sweep_context(executor, {}, settings));
    return {};
  }
  // Keys another process sharing the cache is tuning are not swept here: their results are
  // waited for once this process's own keys are done (with no lease held meanwhile, so two
  // processes never wait for each other), and swept here only if their holder goes without one.
  KeyLeases leases(context, executor.name());
  if (context.cache && !context.cache->read_only()) context.cache->note_progress(true);  // the watchdog watches
  std::vector<const Family*> others;
  const auto claim = [&](const std::vector<const Family*>& families_to_tune) {
    auto split = leases.claim(families_to_tune);
    others = std::move(split.others);
    return std::move(split.mine);
  };
  std::vector<const Family*> swept_here = claim(untuned);
  // A round a signal stopped: no lease outlives this process (a later run would find it held by
  // a process that is gone), then the signal's own end.
  const auto sweep = [&](const std::vector<const Family*>& keys, bool first) {
    SweepReport r = executor.sweep(keys, context, choices, first);
    if (r.interrupted_by) {
      leases.release_all();
      std::raise(r.interrupted_by);
    }
    return r;
  };
  SweepReport w = sweep(swept_here, true);
  int round = 1;
  // Keys a crashed worker left get further rounds in fresh processes, as long as each round
  // finishes some (a crash after a sticky error stored it: that is progress too).
  const auto more_rounds = [&](bool progress) {
    for (; round < 8 && progress; ++round) {
      const auto left = claim(untuned_families(families, filter, context, choices));
      if (left.empty()) break;
      std::cerr << "bench: " << executor.name() << " round " << round + 1 << " for "
                << count_of(static_cast<long long>(left.size()), "key", "keys") << " left\n";
      const SweepReport more = sweep(left, false);
      add_round(w, more);
      swept_here.insert(swept_here.end(), left.begin(), left.end());
      progress = left.size() > untuned_families(families, filter, context, choices).size() || more.crashed_shards > 0;
    }
  };
  more_rounds(w.tuned > 0 || w.crashed_shards > 0);
  leases.release_all();
  // Then the keys other processes held: each is answered by its holder, or taken over and swept
  // here. A key this process swept already and could not tune is left to its timing loop.
  const auto answered = [&](const Family& f) { return cached_config(f, context).has_value(); };
  const auto not_tried = [&](std::vector<const Family*> list) {
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const Family* f) {
                                return std::find(swept_here.begin(), swept_here.end(), f) != swept_here.end();
                              }),
               list.end());
    return list;
  };
  others = not_tried(others);
  while (!others.empty() && round < 8) {
    const auto taken = leases.wait(others, answered);
    if (taken.empty()) break;
    std::cerr << "bench: " << executor.name() << " round " << round + 1 << " for "
              << count_of(static_cast<long long>(taken.size()), "key", "keys") << " taken over\n";
    const SweepReport more = sweep(taken, false);
    add_round(w, more);
    swept_here.insert(swept_here.end(), taken.begin(), taken.end());
    ++round;
    more_rounds(more.tuned > 0 || more.crashed_shards > 0);
    leases.release_all();
    others = not_tried(untuned_families(families, filter, context, choices));
  }
  if (context.cache && !context.cache->read_only()) context.cache->note_progress(false);
  // Only the keys this process swept count as tuned in this run; a key another process tuned is
  // the cache's.
  for (const Family* f : swept_here) {
    if (cached_config(*f, context)) context.swept.insert(f->name);
  }
  std::cerr << executor.summary(w);
  if (w.keys > 0) print_cost(w, settings.sweep);
  add_context(sweep_context(executor, w, settings));
  return w;
}

}  // namespace tunebench
