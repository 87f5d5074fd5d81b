#pragma once
// Sweep executors: where the keys of a sweep are tuned. The sweep stage (sweep_stage.hpp) picks
// one and runs its rounds; a new way to run shards (MPI ranks on other hosts, say) is a new
// executor in this folder.

#include <memory>
#include <string>
#include <vector>

#include "context/choice_log.hpp"
#include "context/run_context.hpp"
#include "plan/family.hpp"
#include "settings/settings.hpp"

namespace tunebench {

/// What one round of a sweep did.
struct SweepReport {
  int keys = 0;             ///< keys to tune (deduplicated by cache key)
  int shards = 0;
  int tuned = 0;            ///< keys the workers finished
  int crashed_shards = 0;   ///< workers that died, hung or failed; their keys get another round
  std::vector<std::string> disagreeing;  ///< doubled keys whose winners differed (families)
  double seconds = 0;       ///< wall time of the round
  double compile_s = 0;     ///< of which compiling the configs before the workers started
  // The sweep's cost, from the workers' records (SweepStats per key), re-timing included:
  std::int64_t runs = 0;    ///< runs timed, warmups included
  double kernel_s = 0;      ///< their summed kernel time (host time for host ops), seconds
  int dropped = 0;          ///< configs dropped before a key's final round
  double worker_s = 0;      ///< wall seconds the workers ran (summed over workers) and re-timing took
  /// kernel_s / worker_s: how busy the sweep kept its GPUs (0 when nothing ran).
  double busy() const { return worker_s > 0 ? kernel_s / worker_s : 0; }
  int retimed = 0;          ///< keys whose finalists were re-timed on the measurement GPU
  int changed = 0;          ///< of which the measurement GPU's winner differs from a worker's
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
};

/// Where keys are swept.
class SweepExecutor {
 public:
  virtual ~SweepExecutor() = default;
  /// For messages and the JSON context: "isolated sweep", "parallel warmup".
  virtual std::string name() const = 0;
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
/// worker's records, and the re-timings, are appended to sweep.jsonl in the run directory. Progress shows on stderr; children's stderr lines are
/// forwarded prefixed "[shard i]"; they talk to this process through WorkerRecords. A child
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

 private:
  int shards_;
  std::vector<std::string> devices_;
  bool isolated_;
  int rounds_ = 0;
  ChildLaunch launch_;
  const Settings& settings_;
};

class MpiSession;

/// Tunes over the ranks of an MPI job (mpirun, srun; docs/multi-node.md), as rank 0. At
/// construction every rank's GPU model, compute capability, driver, toolkit, CPU (for host ops)
/// and kernel versions are compared with rank 0's (a collective with run_mpi_worker): a rank
/// that differs is refused, with a warning, since its results would be filed under rank 0's
/// keys. sweep() hands keys out from a queue, largest estimated cost first, two in flight per
/// rank (rank 0's own child process included), as ranks finish them; each rank sweeps in a
/// child process on its GPU (RankChild), so a sticky CUDA error costs a child, not a rank.
/// Results arrive as WorkerRecords and cache entries in JSON messages, and are stored in
/// context.cache one transaction per batch as they come. A rank silent for
/// settings.hang_timeout_s is counted lost and its keys go to the others. Then every key swept
/// on another rank's GPU (or host, for host ops) has its finalists re-timed here
/// (retime_finalists). On SIGINT, SIGTERM, SIGHUP or SIGQUIT its child is ended, what finished
/// kept, and the signal re-raised (the launcher ends the other ranks).
class MpiExecutor final : public SweepExecutor {
 public:
  /// `untuned` decides whether the CPU model must match too (host ops' keys name it).
  MpiExecutor(MpiSession& mpi, const std::vector<const Family*>& untuned, const RunContext& context,
              const std::vector<Family>& families, ChildLaunch launch, const Settings& settings);
  std::string name() const override { return "MPI sweep"; }
  bool sweeps_up_front() const override { return true; }
  SweepReport sweep(const std::vector<const Family*>& untuned, const RunContext& context, ChoiceLog& choices,
                    bool first_round) override;
  /// Rank i's host, device entry and GPU UUID ("host 0 (GPU-...)"), for the JSON context.
  const std::vector<std::string>& rank_devices() const { return rank_devices_; }
  /// Ranks refused at construction or lost in a sweep.
  const std::vector<int>& refused() const { return refused_; }
  const std::vector<int>& lost() const { return lost_; }

 private:
  MpiSession& mpi_;
  const std::vector<Family>& families_;
  ChildLaunch launch_;
  const Settings& settings_;
  std::vector<bool> accepted_;
  std::vector<std::string> rank_devices_;
  std::vector<int> refused_, lost_;
  bool workers_stopped_ = false;
  int rounds_ = 0;
};

/// A rank above 0 of an MPI sweep: takes part in MpiExecutor's check of the ranks, then sweeps
/// the keys rank 0 hands it in a child process on its GPU, sending back records and results,
/// until rank 0 says stop (or is silent for settings.hang_timeout_s). Writes nothing to
/// stdout. Returns the exit status: 0, also when refused; on SIGINT, SIGTERM, SIGHUP or SIGQUIT
/// its child is ended and the signal re-raised. Honours settings.fault.kill_rank.
int run_mpi_worker(MpiSession& mpi, const std::vector<Family>& families, const RunContext& context,
                   const Settings& settings, ChildLaunch launch);

/// The worker side of ChildProcessExecutor: tunes the families named (one per line) in
/// `list_file` into context.cache, appending WorkerRecords to `list_file`.records. A host op's key
/// (Op::needs_gpu() false) is prepared and timed only while this worker holds the host's cores
/// (a flock on host-cores.lock beside `list_file`, shared by the sweep's workers), so no two
/// shards time host ops at once. Returns the exit status: 0, 2 for an unreadable list or
/// unknown family, 3 when a config left a sticky CUDA error (it is stored as launch_failed; the
/// parent runs another round, in fresh processes that skip it). Honours settings.fault (abort-shard, disagree-shard) for tests.
int run_shard(const std::vector<Family>& families, const RunContext& context, const Settings& settings);

}  // namespace tunebench
