#pragma once
// The sweep stage: the autotune sweep of every selected key the cache cannot answer, before
// Google Benchmark's serial timing loop, through a SweepExecutor, in rounds.

#include <memory>
#include <vector>

#include "plan/filter.hpp"
#include "sweep/executor.hpp"
#include "tunebench/device.hpp"

namespace tunebench {

/// Selected families whose key needs tuning now: GPU families only where a GPU is, replayed
/// families never (they run their recorded config), nor those whose winner `choices` keeps.
/// Throws cache::SqliteError.
std::vector<const Family*> untuned_families(const std::vector<Family>& families, const BenchmarkFilter& filter,
                                            const RunContext& context, const ChoiceLog& choices);

/// The executor this run sweeps with: the ranks of the MPI job when bench runs under a launcher
/// (MpiSession::current(); always, also with nothing to tune, since the other ranks wait for
/// rank 0's word; constructing it compares the ranks, a collective); else N local child
/// processes under PARALLEL_WARMUP_GPUS=N; else one child process on the measurement GPU when
/// TUNEBENCH_ISOLATE_SWEEP says so (auto: when a GPU key needs tuning, so a config that leaves a
/// sticky CUDA error costs a child, not this process's GPU); else the in-process executor.
/// `families` and `context` outlive the executor. Throws std::invalid_argument when the devices
/// cannot host the shards.
std::unique_ptr<SweepExecutor> choose_executor(const Settings& settings, const std::vector<Family>& families,
                                               const std::vector<const Family*>& untuned, const RunContext& context,
                                               const GpuProbe& gpu, ChildLaunch launch);

/// Throws std::invalid_argument (one line) when the cache is read-only and `untuned` is not empty:
/// the executor's workers' results reach the run only through the cache, so the sweep is refused
/// before it starts rather than lost at the merge. `what` names the executor.
void check_results_can_be_stored(const std::vector<const Family*>& untuned, const RunContext& context,
                                 const std::string& what);

/// The sweep's entries of the JSON context: tunebench_sweep_strategy (settings.sweep); when the
/// executor sweeps up front, the figures every sweep has (tunebench_sweep_{seconds,
/// compile_seconds,compile_exposed_seconds,kernel_seconds,worker_seconds,busy_fraction,
/// timed_runs,configs_dropped}),
/// then the executor's own (SweepExecutor::context_entries).
std::vector<ContextEntry> sweep_context(const SweepExecutor& executor, const SweepReport& report,
                                        const Settings& settings);

/// Runs `executor` over `untuned` (untuned_families of `families` and `filter`, already passed
/// through check_results_can_be_stored), then further rounds in fresh workers for the keys that
/// crashed workers left (a sticky CUDA error ends a worker), as long as each round finishes
/// some (at most 8 rounds); marks the families it tuned in context.swept (the last fact of the
/// run's context it completes); winners the cache cannot take go to `choices`. Prints the
/// executor's summary and the sweep's cost on stderr. Nothing of that when the executor does not
/// sweep up front. Either way adds sweep_context to Google Benchmark's context.
SweepReport run_sweep_stage(SweepExecutor& executor, const std::vector<const Family*>& untuned,
                            const std::vector<Family>& families, const BenchmarkFilter& filter, RunContext& context,
                            ChoiceLog& choices, const Settings& settings);

}  // namespace tunebench
