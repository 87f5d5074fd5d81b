#pragma once
// A sweep child of an MPI rank: one process of this binary on the rank's GPU, kept for many
// keys, which it reads one a line from a FIFO as the rank is handed them (the worker of
// ChildProcessExecutor, run_shard, reading its list). A config that leaves a sticky CUDA error
// costs this child, not the rank: the rank starts another for the keys that come next.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/executor.hpp"
#include "sweep/worker_record.hpp"

namespace tunebench {

/// The tags of the sweep's MPI messages: keys or stop (rank 0 to a rank, JSON), a child's
/// WorkerRecord line, a key's result (its cache entry, JSON), a heartbeat (either way, empty).
enum MpiTag : int { kWorkTag = 1, kRecordTag = 2, kResultTag = 3, kAliveTag = 4 };

/// One child, started on the first key fed to it.
class RankChild {
 public:
  /// Its files go into `dir` (named after `generation`, so a restarted child starts clean);
  /// `device` is its CUDA_VISIBLE_DEVICES (rank_child_devices); `label` prefixes its forwarded
  /// stderr lines ("rank 2").
  RankChild(std::filesystem::path dir, int generation, std::string device, std::string label, ChildLaunch launch);
  ~RankChild();
  RankChild(const RankChild&) = delete;
  RankChild& operator=(const RankChild&) = delete;

  /// Hands it `f`, its cache first seeded with `known` (failures above all, so that a config
  /// that broke an earlier child is skipped). Starts the child when it is not running yet.
  void feed(const Family& f, const std::vector<cache::Measurement>& known, const RunContext& context);
  /// Reads its stderr (forwarded to this process's, prefixed) for up to `wait_ms`, its new
  /// records and whether it exited; kills it when it has been silent for `hang_s` outside
  /// compiling or waiting for the host's cores (the config it was on is then stored as timeout).
  std::vector<WorkerRecord> poll(int wait_ms, double hang_s, const RunContext& context,
                                 const std::vector<Family>& families);
  /// What its cache holds for `f` (measurements and best), as a JSON result (entry_json).
  nlohmann::json result(const Family& f, const RunContext& context);
  /// No more keys: it ends after the ones fed.
  void close_input();
  /// Ends it now (SIGTERM, SIGKILL after 2 s) and reaps it.
  void stop();
  bool running() const { return pid_ > 0 && !exited_; }
  bool exited() const { return exited_; }
  /// The waitpid status, once exited.
  int status() const { return status_; }
  bool hung() const { return hung_; }
  /// Keys fed and not yet tuned, oldest first.
  std::vector<std::string>& in_flight() { return in_flight_; }
  /// Seconds from its start to its exit (or now).
  double wall_s() const;

 private:
  void start();
  void read_stderr(int wait_ms);
  std::filesystem::path dir_, list_, store_;
  std::string device_, label_;
  ChildLaunch launch_;
  pid_t pid_ = -1;
  int err_fd_ = -1, feed_fd_ = -1, status_ = 0;
  bool exited_ = false, hung_ = false;
  std::string partial_;
  std::unique_ptr<RecordReader> records_;
  std::vector<std::string> in_flight_;
  WorkerRecord last_;
  std::chrono::steady_clock::time_point active_at_, started_at_, ended_at_;
};

/// The CUDA_VISIBLE_DEVICES of a rank's sweep child: the rank's own GPU entry
/// (MpiSession::device), else this process's as the settings table read it
/// (settings.visible_devices; "" when unset, which leaves the child no GPU, as its rank has none).
std::string rank_child_devices(const std::string& rank_device, const Settings& settings);

/// A measurement and a cache entry as JSON, and back (the shape tunebench-cache export uses,
/// plus `host`). entry_from_json throws nlohmann::json::exception on a malformed one.
nlohmann::json measurement_json(const cache::Measurement& m);
cache::Measurement measurement_from_json(const nlohmann::json& j);
nlohmann::json entry_json(const std::vector<cache::Measurement>& ms, const std::optional<cache::Best>& best);
cache::ConfigCache::Entry entry_from_json(const nlohmann::json& j, const cache::Key& key);

}  // namespace tunebench
