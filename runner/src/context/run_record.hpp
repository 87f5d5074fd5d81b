#pragma once
// Run directories and the record of the configs a run used, which a later run can replay
// (REPLAY_FROM) so that an A/B compares identical configs.

#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunebench {

/// Creates a fresh folder root/YYYYmmdd-HHMMSS (local time of `now`) with an atomic mkdir,
/// retreating to -2, -3, ... when another run took the name, so two runs started in the same
/// second never share one. Creates `root` if needed. Throws std::runtime_error naming the path
/// and the system's reason ("cannot make PATH (No such file or directory)").
std::filesystem::path claim_run_dir(const std::filesystem::path& root, std::time_t now);

/// How a benchmark got its config.
enum class ConfigSource { kCache, kTuned, kReplayed };
const char* to_string(ConfigSource source);
/// The source called `name` ("cache", "tuned", "replayed"), or nothing.
std::optional<ConfigSource> parse_config_source(const std::string& name);

/// One benchmark's config in a run.
struct RecordedConfig {
  std::string benchmark;  ///< family name
  std::string op;
  std::string kernel_version;
  std::string tuning_key;
  std::string device;                          ///< device name ("host" side: the CPU model)
  std::string config;                          ///< Config::str()
  ConfigSource source = ConfigSource::kCache;  ///< written as "cache", "tuned" or "replayed"
};

/// A replay directory that cannot be used. what() is one line.
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The configs of a run, written to <run dir>/configs.json (format: {"tunebench_run_record": 1,
/// "configs": [RecordedConfig as objects]}). Thread-safe.
class RunRecord {
 public:
  /// Records a benchmark's config; a benchmark already recorded keeps its first entry (Google
  /// Benchmark runs a benchmark function several times).
  void add(RecordedConfig entry);
  std::vector<RecordedConfig> entries() const;
  /// Writes configs.json into `dir`, whole or not at all (write_file_atomically). Throws
  /// std::runtime_error naming the file when it cannot be written.
  void write(const std::filesystem::path& dir) const;
  /// Reads <dir>/configs.json. Throws ReplayError naming REPLAY_FROM=<dir> if it is missing, and
  /// the file if it is not a regular file (a FIFO or a folder is never opened for a blocking
  /// read) or not a run record.
  static std::vector<RecordedConfig> read(const std::filesystem::path& dir);

 private:
  mutable std::mutex mutex_;
  std::vector<RecordedConfig> entries_;
  std::set<std::string> names_;  // of entries_, so add() stays fast with many benchmarks
};

}  // namespace tunebench
