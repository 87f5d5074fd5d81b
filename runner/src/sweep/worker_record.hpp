#pragma once
// What a sweep worker (a child process tuning keys) tells its parent: structured records, one
// JSON object per line of an append-only file, never human text on stderr. The parent's watchdog
// and its per-shard figures read them.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tunebench {

/// One record. JSON: {"record": "started"|"waiting"|"preparing"|"compiling"|"timing"|"tuned", "key": ...,
/// "config": ..., "seconds": ..., "device": ..., "runs": ..., "kernel_seconds": ..., "dropped": ..., "pruned": ...,
/// "finalists": [...], "compile_wait_seconds": ..., "time": ...}; fields a kind does not use are
/// left out.
struct WorkerRecord {
  enum class Kind {
    kStarted,    ///< the worker is up; `device` is its GPU (token, and UUID when known)
    kPreparing,  ///< key `key`: preparing its workload
    kCompiling,  ///< key `key`: compiling its configs, or waiting for the compile pool to
                 ///< (no kernel runs; the watchdog waits)
    kTiming,     ///< key `key`: timing config `config` (or, for a round of several configs
                 ///< interleaved, a description that is not a config)
    kTuned,      ///< key `key` is stored in the worker's cache after `seconds` of tuning
    kWaiting,    ///< key `key` (a host op): waiting for another shard to finish timing a host op
                 ///< (no kernel runs; the watchdog waits)
  };
  WorkerRecord(Kind kind_ = Kind::kPreparing, std::string key_ = {}, std::string config_ = {}, double seconds_ = 0,
               std::string device_ = {})
      : kind(kind_), key(std::move(key_)), config(std::move(config_)), seconds(seconds_), device(std::move(device_)) {}
  Kind kind = Kind::kPreparing;
  std::string key;     ///< family name of the key
  std::string config;  ///< kTiming: Config::str() of the config being timed
  double seconds = 0;  ///< kTuned: wall seconds the key took
  std::string device;  ///< kStarted
  // kTuned, from the key's SweepStats (all 0 and empty when the cache already answered it):
  std::int64_t runs = 0;               ///< runs timed, warmups included
  double kernel_s = 0;                 ///< their summed time, seconds
  int dropped = 0;                     ///< configs dropped before the final round
  int pruned = 0;                      ///< configs not run: pruned by the key with half the M
  std::vector<std::string> finalists;  ///< the final round's configs (Config::str())
  /// Wall seconds the worker waited for the key's configs to be compiled before and while
  /// tuning it (the compile pool's announcement, its own precompile): compile time exposed.
  double compile_wait_s = 0;
  /// When it was written: Unix seconds (RecordWriter stamps it; 0 in a record not yet written).
  double time = 0;
};

/// `record` as one line of JSON (no newline).
std::string to_json_line(const WorkerRecord& record);

/// The record of one line, or nothing when the line is not a record (torn, foreign).
std::optional<WorkerRecord> parse_record_line(const std::string& line);

/// Appends records to a worker's records file, one whole line per write() and flushed, so a
/// worker killed at any point leaves only whole records (a torn last line is skipped by the
/// reader).
class RecordWriter {
 public:
  /// Opens (creates) `file` for appending; throws std::runtime_error naming it on failure.
  explicit RecordWriter(const std::filesystem::path& file);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  void write(const WorkerRecord& record);

 private:
  std::FILE* file_ = nullptr;
};

/// Reads the records a worker appended since the last call.
class RecordReader {
 public:
  explicit RecordReader(std::filesystem::path file) : file_(std::move(file)) {}
  /// The records of lines completed since the last call (none while the file does not exist).
  std::vector<WorkerRecord> poll();

 private:
  std::filesystem::path file_;
  long offset_ = 0;
  std::string partial_;
};

}  // namespace tunebench
