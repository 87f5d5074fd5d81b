#pragma once
// bench under an MPI launcher (mpirun, srun): which rank this process is, its GPU, and the
// messages the ranks of a sweep exchange. MPI is optional at build time (TUNEBENCH_WITH_MPI);
// a build without it still detects a launcher, to refuse to run as R copies of one bench.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "settings/settings.hpp"

namespace tunebench {

/// What the launcher's variables say, before MPI is started.
struct Launch {
  int size = 1;         ///< ranks in the job (1: not under a launcher, or alone)
  int rank = 0;         ///< this process's rank
  int local_rank = -1;  ///< its rank among the ranks of its host; -1 when no variable gives it
  std::string by;       ///< the variable that gave the size, as "NAME=VALUE" (messages)
};

/// From Open MPI's OMPI_COMM_WORLD_*, MPICH's PMI_SIZE / PMI_RANK / MPI_LOCALRANKID, Slurm's
/// SLURM_STEP_NUM_TASKS / SLURM_PROCID / SLURM_LOCALID (an srun step; a batch script has no
/// step of several tasks), PMIX_RANK, in that order. A sweep's child process (settings.shard)
/// is never a rank. Throws std::invalid_argument (one line) when a rank or local rank is not
/// below the size beside it.
Launch detect_launch(const Settings& settings);

/// The CUDA_VISIBLE_DEVICES entry of the rank of `local_rank` on its host: that entry of
/// `tokens` (its host's entries, device_tokens). "" when `tokens` is empty (no GPU: host ops
/// only). Throws std::invalid_argument (one line) when local_rank >= tokens.size(), and when
/// its entry is listed before it too (two ranks on one GPU).
std::string rank_device(int local_rank, const std::vector<std::string>& tokens, const std::string& host);

/// The MPI job this process is a rank of (one per process, made by start).
class MpiSession {
 public:
  /// Starts MPI (MPI_Init_thread, funneled) when `settings` say this process runs under a
  /// launcher with more than one rank, after pointing CUDA_VISIBLE_DEVICES (in `settings` and
  /// the environment, before any CUDA call) at this rank's GPU. Returns null otherwise. Throws
  /// std::invalid_argument (one line, exit status 2) in a build without MPI under such a
  /// launcher, and, on every rank, when a host has more ranks than GPU entries.
  static MpiSession* start(Settings& settings);
  /// The session start() made, or null.
  static MpiSession* current();
  /// Ends MPI: MPI_Finalize when every rank ends well (`exit_status` 0 here), else MPI_Abort
  /// with it, so that no rank waits for one that left. After lost_a_rank() it leaves without
  /// MPI_Finalize (flushing the standard streams, then _Exit(exit_status)): the finalize's
  /// closing fence waits for every rank of the job, and under Open MPI 4.1 with
  /// --enable-recovery it was seen to wait for a killed one for ever. Nothing without a session.
  static void end(int exit_status);
  /// Marks that a rank of this job was lost (dead, hung or cut off), for end().
  void lost_a_rank() { lost_rank_ = true; }

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& host() const { return host_; }
  /// This rank's CUDA_VISIBLE_DEVICES entry ("" without a GPU).
  const std::string& device() const { return device_; }

  /// Sends `text` to rank `to` without waiting for it to be received (a lost rank never
  /// blocks the sender); buffers are freed as sends complete.
  void post(int to, int tag, const std::string& text);
  /// A message that has arrived, from any rank with any tag, if one has.
  struct Message {
    int from = 0;
    int tag = 0;
    std::string text;
  };
  std::optional<Message> receive();
  /// Cancels the sends to `rank` not yet received (a lost rank).
  void forget(int rank);
  /// Every rank's `mine`, at rank 0 (others get an empty vector). Collective.
  std::vector<std::string> gather(const std::string& mine);
  /// Rank 0's `flags` (one per rank), each rank getting its own. Collective.
  int scatter(const std::vector<int>& flags);

  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  MpiSession() = default;
  struct Pending;
  int rank_ = 0, size_ = 1;
  std::string host_, device_;
  bool lost_rank_ = false;
  std::vector<std::unique_ptr<Pending>> pending_;
};

/// Whether this build has MPI.
bool built_with_mpi();

}  // namespace tunebench
