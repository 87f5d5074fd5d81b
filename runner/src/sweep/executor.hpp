#pragma once
// Sweep executors: where the keys of a sweep are tuned. The sweep stage (sweep_stage.hpp) picks
// one in choose_executor and runs its rounds; each executor describes itself (its summary on
// stderr, its entries of the JSON context), so a new way to run shards is a new executor in this
// folder and its case in choose_executor.

#include <memory>
#include <string>
#include <vector>

#include "common/context_entry.hpp"
#include "context/choice_log.hpp"
#include "context/run_context.hpp"
#include "plan/family.hpp"
#include "settings/settings.hpp"

namespace tunebench {

/// What one round of a sweep did.
struct SweepReport {
  int keys = 0;  ///< keys to tune (deduplicated by cache key)
  int shards = 0;
  int tuned = 0;                         ///< keys the workers finished
  int crashed_shards = 0;                ///< workers that died, hung or failed; their keys get another round
  std::vector<std::string> disagreeing;  ///< doubled keys whose winners differed (families)
  double seconds = 0;                    ///< wall time of the round
  /// Wall seconds the compile pools had configs to compile (CompilePool::seconds; beside the
  /// timing, summed over the pools: one per round on one host, one per MPI rank).
  double compile_s = 0;
  /// Compile time exposed: wall seconds the workers waited for their keys' configs to be
  /// compiled (summed over workers; WorkerRecord::compile_wait_s), re-timing here included.
  double compile_exposed_s = 0;
  // The sweep's cost, from the workers' records (SweepStats per key), re-timing included:
  std::int64_t runs = 0;  ///< runs timed, warmups included
  double kernel_s = 0;    ///< their summed kernel time (host time for host ops), seconds
  int dropped = 0;        ///< configs dropped before a key's final round
  int pruned = 0;         ///< configs not run: pruned by the key with half the M
  double worker_s = 0;    ///< wall seconds the workers ran (summed over workers) and re-timing took
  /// kernel_s / worker_s: how busy the sweep kept its GPUs (0 when nothing ran).
  double busy() const { return worker_s > 0 ? kernel_s / worker_s : 0; }
  int retimed = 0;         ///< keys whose finalists bench re-timed itself
  int retimed_on_gpu = 0;  ///< of those, GPU keys (re-timed on the measurement GPU; host keys in bench's process)
  int changed = 0;         ///< of which the measurement GPU's winner differs from a worker's
  /// Per worker: keys finished, seconds spent tuning them (as the worker timed each key, from
  /// its records) and seconds from its start to its exit. wall - tuning is start-up and idle.
  /// `device`: its CUDA_VISIBLE_DEVICES entry, with the card's UUID where the worker's `started`
  /// record gave one ("6 (GPU-...)").
  struct Shard {
    int keys = 0;
    double tuning_s = 0;
    double wall_s = 0;
    std::string device;
  };
  std::vector<Shard> per_shard;
  /// The signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that stopped the round, 0 when none: its finished
  /// keys are stored and its workers stopped; the caller gives up what it holds (the keys'
  /// leases) and raises the signal again, its handlers restored.
  int interrupted_by = 0;
};

/// Where keys are swept.
class SweepExecutor {
 public:
  virtual ~SweepExecutor() = default;
  /// For messages: "isolated sweep", "parallel warmup", "MPI sweep".
  virtual std::string name() const = 0;
  /// What the sweep did, for people: the lines (each "bench: ...\n") the sweep stage prints on
  /// stderr once its rounds are done, before the cost line every executor shares. `report` is
  /// the rounds' figures added up. Only asked of an executor that sweeps up front.
  virtual std::string summary(const SweepReport& report) const = 0;
  /// What the sweep did, for the JSON context: this executor's own entries, written by the sweep
  /// stage beside the figures every sweep has (tunebench_sweep_*; sweep_context). Only asked of
  /// an executor that sweeps up front.
  virtual std::vector<ContextEntry> context_entries(const SweepReport& report) const = 0;
  /// Whether sweep() tunes up front. The in-process executor does not: each key is tuned right
  /// before its own benchmark's timing loop, on the workload that loop then times.
  virtual bool sweeps_up_front() const = 0;
  /// Tunes `untuned` (families; keys shared by several are tuned once) into context.cache;
  /// winners the cache cannot take are kept in `choices`. `first_round`: the first of the sweep
  /// stage's rounds (later rounds retry what crashed workers left). Throws
  /// std::invalid_argument for settings it cannot work with.
  virtual SweepReport sweep(const std::vector<const Family*>& untuned, const RunContext& context, ChoiceLog& choices,
                            bool first_round) = 0;
};

/// Tunes in bench itself, lazily (see sweeps_up_front).
class InProcessExecutor final : public SweepExecutor {
 public:
  std::string name() const override { return "in-process sweep"; }
  bool sweeps_up_front() const override { return false; }
  SweepReport sweep(const std::vector<const Family*>&, const RunContext&, ChoiceLog&, bool) override { return {}; }
  /// Nothing: each key's sweep is part of its benchmark (and of its config's record).
  std::string summary(const SweepReport&) const override { return ""; }
  std::vector<ContextEntry> context_entries(const SweepReport&) const override { return {}; }
};

/// How child processes of this binary are started.
struct ChildLaunch {
  std::string exe;                ///< this binary
  std::vector<std::string> args;  ///< the caller's arguments, as given (argv[1..])
};

/// Tunes in child processes of this binary on this host, one per device token: shard i runs
/// under CUDA_VISIBLE_DEVICES=tokens[i] with its own cache file, and its results are merged into
/// context.cache in one transaction. With more than one shard, a share of the keys (10% in the
/// first round) is tuned on two shards (their winners compared: the disagreement figure); then
/// every GPU key tuned on another GPU than the measurement GPU (device 0 of this process; shard 0
/// runs there), and every key tuned on two shards, has its finalists (every shard's) re-timed
/// here (FinalRound: interleaved, the tie rule) and that winner stored; a config the cache
/// measured faster than the winner by more than the tie band joins them, until none is. Each
/// worker's records, and the re-timings, are appended to sweep.jsonl in the run directory. Progress shows on stderr;
/// children's stderr lines are forwarded prefixed "[shard i]"; they talk to this process through WorkerRecords. A child
/// without a record for settings.hang_timeout_s (the clock waits while it compiles) is killed,
/// and the config it was on stored as status timeout. On SIGINT, SIGTERM, SIGHUP or SIGQUIT the children are
/// ended (killed after 2 s) and reaped, finished keys merged, and the signal re-raised; a
/// signal ignored when the sweep starts stays ignored. Its scratch folder (tunebench-warmup-*
/// under TMPDIR, else /tmp) is removed however it ends.
class ChildProcessExecutor final : public SweepExecutor {
 public:
  /// `shards` children on the first `shards` of `tokens` (device_tokens); `isolated` names it
  /// "isolated sweep" (one child on the measurement GPU) instead of "parallel warmup". Throws
  /// std::invalid_argument when shard_devices refuses the tokens.
  ChildProcessExecutor(int shards, std::vector<std::string> tokens, bool isolated, ChildLaunch launch,
                       const Settings& settings);
  std::string name() const override { return isolated_ ? "isolated sweep" : "parallel warmup"; }
  bool sweeps_up_front() const override { return true; }
  /// Throws std::invalid_argument when TMPDIR is not a writable folder.
  SweepReport sweep(const std::vector<const Family*>& untuned, const RunContext& context, ChoiceLog& choices,
                    bool first_round) override;
  /// Isolated: one line of keys, seconds, tuned and failed children. Parallel: sharded_summary.
  std::string summary(const SweepReport& report) const override;
  /// Isolated: tunebench_isolated_sweep_{keys,seconds}. Parallel: parallel_warmup_{gpus,keys,
  /// seconds,disagreements,disagreeing_keys,retimed_keys,changed_winners,shard_devices}.
  std::vector<ContextEntry> context_entries(const SweepReport& report) const override;

 private:
  int shards_;
  std::vector<std::string> devices_;
  bool isolated_;
  int rounds_ = 0;
  ChildLaunch launch_;
  const Settings& settings_;
};

/// The worker side of ChildProcessExecutor: tunes the families named (one per line) in
/// `list_file` into context.cache, appending WorkerRecords to `list_file`.records. A host op's key
/// (Op::needs_gpu() false) is prepared and timed only while this worker holds the host's cores
/// (a flock on host-cores.lock beside `list_file`, shared by the sweep's workers), so no two
/// shards time host ops at once. Returns the exit status: 0, 2 for an unreadable list or
/// unknown family, 3 when a config left a sticky CUDA error (it is stored as launch_failed; the
/// parent runs another round, in fresh processes that skip it). Honours settings.fault (abort-shard, disagree-shard)
/// for tests.
int run_shard(const std::vector<Family>& families, const RunContext& context, const Settings& settings);

}  // namespace tunebench
