#pragma once
// Pieces of ChildProcessExecutor that other executors reuse (the MPI ranks start their sweep
// children the same way): the scratch folder, the caught signals, starting a child of this
// binary, the cost estimate of the keys, and the re-timing of finalists on this process's GPU.

#include <signal.h>
#include <sys/types.h>

#include <array>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stop_signals.hpp"
#include "sweep/executor.hpp"

namespace tunebench {

/// A scratch folder `<prefix>XXXXXX` under TMPDIR (else /tmp), removed when this goes, with an
/// `owner` file naming this process and `cache`, the cache its workers' results go to
/// (write_scratch_owner), so that a later run can merge and remove it if this process is killed
/// (clean_dead_scratch). Throws std::invalid_argument (one line naming the variable) when it is
/// not a writable folder.
class Scratch {
 public:
  explicit Scratch(const Settings& s, const std::string& prefix = "tunebench-warmup-",
                   const std::filesystem::path& cache = {});
  ~Scratch() { remove(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const std::filesystem::path& dir() const { return dir_; }
  /// Now, not at unwinding: a re-raised signal ends the process without it.
  void remove();

 private:
  std::filesystem::path dir_;
};

/// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT while it lives (caught_signal() then says which
/// came), except a signal ignored on entry, which stays ignored; restores the old handlers.
class CatchSignals {
 public:
  CatchSignals();
  void restore() { scope_.restore(); }

 private:
  StopSignalScope scope_;
};

/// The signal caught since the last CatchSignals was made, 0 when none.
int caught_signal();

/// Forks and execs `exe args`: CUDA_VISIBLE_DEVICES=token, TUNEBENCH_CACHE=store, stdout to
/// /dev/null, stderr to `err_write`; the child dies with this process (PR_SET_PDEATHSIG).
pid_t spawn_child(const std::string& exe, const std::vector<std::string>& args, const std::string& token,
                  const std::string& store, int err_write);

/// "exit status N" or "killed by signal N", of a waitpid status.
std::string describe_exit(int status);

/// One family per cache key, with the configs its sweep runs and its estimated cost (seconds,
/// sweep_cost_s: a weight for planning, not a prediction).
struct SweepKeys {
  std::vector<const Family*> keys;
  std::vector<std::vector<Config>> fitting;
  std::vector<double> costs;
};
SweepKeys sweep_keys(const std::vector<const Family*>& untuned, const RunContext& context);

/// The configs the sweep of `f` runs: those of context.tune.space that can_implement its shape
/// on context.device.
std::vector<Config> fitting_configs(const Family& f, const RunContext& context);

/// One key's finalists (`contenders`) re-timed on this process's GPU (FinalRound: interleaved,
/// the tie rule) until no config the cache measured is faster than the winner by more than the
/// tie band; the winner is stored. Adds the cost to `report` and a `retimed` entry to `log` (a
/// JSON array); a winner the cache cannot take is kept in `choices`. Returns the winner. Throws
/// what ensure_tuned throws.
Config retime_finalists(const Family& f, std::vector<Config> contenders, const RunContext& context, ChoiceLog& choices,
                        SweepReport& report, nlohmann::json& log);

/// How a sharded summary names a worker: "shard" or "rank" (and its plural), what fails ("shard",
/// "worker"), and the label of a worker's own line ("parallel warmup shard", "MPI sweep rank").
struct WorkerNouns {
  const char* worker;
  const char* workers;
  const char* failed;
  const char* failed_plural;
  const char* line_label;
};

/// The summary of a sweep over several workers (`name`: "parallel warmup"): the totals, a line
/// per worker (keys, seconds tuning, seconds from start to exit), the keys re-timed on the
/// measurement GPU, and a warning naming the keys whose winners differed on two shards.
std::string sharded_summary(const std::string& name, const SweepReport& report, const WorkerNouns& nouns);

}  // namespace tunebench
