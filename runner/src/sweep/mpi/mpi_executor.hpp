#pragma once
// The sweep over the ranks of an MPI job (docs/multi-node.md): rank 0's executor, and what the
// other ranks run instead of bench's stages. The session (mpi_session.hpp) says whether bench
// runs under a launcher; choose_executor (sweep_stage.hpp) then picks MpiExecutor.

#include <string>
#include <vector>

#include "sweep/executor.hpp"

namespace tunebench {

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
  /// sharded_summary, of ranks and their workers.
  std::string summary(const SweepReport& report) const override;
  /// Which rank swept on which host and card, which ranks were refused or lost, and the sweep's
  /// figures: mpi_ranks, mpi_rank_devices (rank i's host, device entry and GPU UUID: "0=host 0
  /// (GPU-...)"), mpi_refused_ranks, mpi_lost_ranks, mpi_sweep_{keys,seconds},
  /// mpi_retimed_keys, mpi_changed_winners.
  std::vector<ContextEntry> context_entries(const SweepReport& report) const override;

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

}  // namespace tunebench
