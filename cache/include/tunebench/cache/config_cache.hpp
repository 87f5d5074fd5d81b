#pragma once
// The config cache: the best config per tuning key and every per-config measurement, in one
// SQLite file shared by processes (WAL, busy timeout, transactions).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tunebench/cache/database.hpp"
#include "tunebench/cache/lease.hpp"

namespace tunebench::cache {

namespace detail {
class Statement;
class Heartbeat;
}  // namespace detail

/// What a tuned config is valid for. Two runs share a cached config only when every field is
/// equal: the op, its kernel version (a hash of the kernel source), the tuning key (a function
/// of the shape, see Op::tuning_key), the device (name and compute capability), the toolkit
/// (CUDA runtime version, or "host") and the timing mode.
struct Key {
  std::string op;
  std::string kernel_version;
  std::string tuning_key;
  std::string device_name;
  std::string device_cc;  ///< "9.0"
  std::string toolkit;    ///< e.g. "cuda 13.0"
  std::string timing_mode;
  friend bool operator==(const Key& a, const Key& b);
  /// Field by field in declaration order: keys in ordered sets and maps.
  friend bool operator<(const Key& a, const Key& b);
};

/// This machine's host name (gethostname; "" when it cannot be read): what store() records in a
/// Measurement whose host was left empty, so a measurement taken here is one whose host equals it.
std::string this_host();

/// Outcome of timing one config. kPruned: not timed on this key because the race's screen left it
/// out (it ran far slower than the best on the key with half the M; TuneOptions::prune_factor);
/// its error text says by how much. Like a failure, it is not tried again on the key.
enum class Status { kOk, kCompileFailed, kLaunchFailed, kWrongResult, kTimeout, kUnsupported, kPruned };

/// "ok", "compile_failed", "launch_failed", "wrong_result", "timeout", "unsupported", "pruned".
std::string_view to_string(Status status);
/// Inverse of to_string; throws std::invalid_argument quoting the text.
Status status_from_string(std::string_view text);

/// One config's measurement. Times are kernel (or host) time per run in nanoseconds, the 20th,
/// 50th and 80th percentiles over the repetitions; absent unless status is kOk.
struct Measurement {
  std::string config;  ///< Config::str() form
  Status status = Status::kOk;
  std::optional<std::int64_t> p20_ns, p50_ns, p80_ns;
  std::string error;             ///< one line, for failures
  std::int64_t measured_at = 0;  ///< Unix seconds
  std::string device_uuid;       ///< the card it ran on ("" for host ops)
  /// The host it ran on (its host name); "" when stored by a tunebench before schema 3, and
  /// filled in by store() with this process's host name when left empty.
  std::string host;
};

/// The chosen config of a key.
struct Best {
  std::string config;
  std::int64_t p50_ns = 0;
  std::int64_t updated_at = 0;  ///< Unix seconds
};

/// How long a cache write waits for a lock another process holds (a long import, say).
struct BusyPolicy {
  /// SQLite's busy timeout: how long one attempt waits for the lock (every statement).
  std::chrono::milliseconds timeout{10000};
  /// How long ConfigCache::store keeps retrying, with growing pauses between attempts, before
  /// it gives up with SqliteError of a busy code (is_busy): a sweep's results are worth a wait.
  std::chrono::milliseconds store_budget{60000};
};

/// The cache file. Schema history (PRAGMA user_version): 1 = the table of best configs;
/// 2 = plus the per-config measurements; 3 = plus each measurement's host (an MPI sweep times
/// keys on several); 4 = plus the leases of keys being tuned (lease.hpp). Older files are
/// migrated when opened for writing, and read as they are when opened with Access::kRead.
///
/// A key's best is settled by every write, whoever writes:
/// - a write that brings a best (a sweep's winner, an import's) replaces the stored best unless
///   the stored one, another sweep's winner, is faster than it by more than kTieTolerance (the
///   autotuner's tie band), each judged by its config's latest ok measurement: so several
///   processes storing sweeps of one key leave the faster winner, not the last writer's;
/// - after any write, a best whose own config's measurement failed is re-chosen as the key's
///   fastest ok measurement (removed when the key has none: the key is tuned again).
/// The other measurements of a key never displace its best: they include configs a race dropped
/// after one or two runs, whose p50 is no match for a winner's repetitions. An untimed best (p50
/// 0: one candidate) whose measurement did not fail is kept.
///
/// A file is identified before anything is written to it, through a connection that writes
/// nothing and makes nothing beside it (Access::kProbe):
/// - ours: PRAGMA application_id kApplicationId, or 0 with this library's tables (a file of a
///   tunebench that did not stamp it; stamped when next opened for writing);
/// - empty: 0 bytes (SQLite's empty database), or an SQLite database with no tables and no
///   application_id: opened for writing, it becomes a new cache, with a one-line note on stderr;
/// - anything else (another application's database, a file that is not SQLite, a cache of a
///   newer schema) is refused with SqliteError, left byte for byte as it was.
/// Only a file that is ours and fails PRAGMA integrity_check (or that SQLite cannot read while
/// its header says it is ours) counts as damaged: see OnDamage.
class ConfigCache {
 public:
  static constexpr int kSchemaVersion = 5;
  /// PRAGMA application_id of tunebench caches: "TBNC".
  static constexpr std::int32_t kApplicationId = 0x54424E43;
  /// Configs whose p50 is within this fraction of the fastest tie (the autotuner's tie rule,
  /// TuneOptions::tie_tolerance); a stored best faster than an incoming one by more stays (see
  /// above).
  static constexpr double kTieTolerance = 0.01;

  /// What to do with a cache of ours that is damaged.
  enum class OnDamage {
    kMoveAside,  ///< rename it "<file>.corrupt-<unix time>" (with its -wal and -shm) with a
                 ///< one-line warning on stderr and start a fresh cache (what bench does)
    kThrow,      ///< leave it alone and throw SqliteError naming the problem (inspection tools)
  };

  /// Every method throws SqliteError (one line naming the file) when SQLite fails; those that
  /// write (store, erase, Transaction) throw it with code SQLITE_READONLY, before writing
  /// anything, when the file is read_only().
  ///
  /// Opens or creates the cache at `path`. Throws SqliteError when `path` is a folder or not a
  /// regular file (a device such as /dev/null, a pipe), when even a fresh file cannot be
  /// created there (e.g. the folder is not writable), with code SQLITE_NOTADB when the file is
  /// not ours (see above; whatever `on_damage` says), and, with OnDamage::kThrow, when it is a
  /// damaged cache of ours. With Access::kRead nothing is ever written or created: a missing or
  /// empty file throws SqliteError (SQLITE_CANTOPEN), a damaged one throws as with kThrow, an
  /// older schema is read as it is, and every write throws as for a read-only file.
  /// Access::kProbe is taken as kRead.
  explicit ConfigCache(const std::filesystem::path& path, OnDamage on_damage = OnDamage::kMoveAside,
                       BusyPolicy busy = BusyPolicy(), Access access = Access::kReadWrite);
  ~ConfigCache();
  ConfigCache(const ConfigCache&) = delete;
  ConfigCache& operator=(const ConfigCache&) = delete;

  /// The best config of `key`, if tuned.
  std::optional<Best> best(const Key& key);
  /// The measurement of `config` under `key`, if any.
  std::optional<Measurement> measurement(const Key& key, const std::string& config);
  /// Every measurement of `key`, fastest ok ones first, then failures.
  std::vector<Measurement> measurements(const Key& key);

  /// Stores the measurements (replacing earlier ones of the same configs, except that a pruned row
  /// only fills a gap: it says the config was not run, which adds nothing to a row that has a
  /// time or a failure) and, if given, the
  /// best config of `key`, in one transaction, and settles the key's best (see the class). While another process holds
  /// the write lock, it retries for up to BusyPolicy::store_budget, then throws SqliteError with a busy code (is_busy)
  /// saying so; nothing is stored then.
  void store(const Key& key, const std::vector<Measurement>& results, const std::optional<Best>& best);

  /// What store() takes, for several keys at once.
  struct Entry {
    Key key;
    std::vector<Measurement> results;
    std::optional<Best> best;
  };
  /// Stores every entry in one transaction: all of them or, on failure, none, and settles each
  /// key's best. Retries a busy file as store() above.
  void store(const std::vector<Entry>& entries);
  /// Every key of the file, measured or with a best, with its measurements and best.
  std::vector<Entry> entries();

  /// Calls `fn` with every key of the file (measured, with a best, or both), each once,
  /// ordered by op, then tuning key, then the other fields; holds one row at a time, so a
  /// cache of any size is walked in bounded memory. `fn` may read the cache but not write it.
  void for_each_key(const std::function<void(const Key&)>& fn);
  /// Calls `fn` with every measurement of `key` in the order of measurements(), one at a time.
  void for_each_measurement(const Key& key, const std::function<void(const Measurement&)>& fn);

  /// A write transaction filled in several calls, for writes too large to hold in memory at
  /// once (a streamed import): the constructor takes the write lock, retrying a busy file as
  /// store() does; store() adds rows; commit() makes them all visible at once. Destroyed
  /// without commit(), it rolls everything back. While it lives, the cache's other writes must
  /// not be called (they would begin a second transaction); its reads see the rows stored so far.
  class Transaction {
   public:
    /// Throws SqliteError: SQLITE_READONLY for a read-only cache, a busy code (is_busy) when the
    /// lock stays held past BusyPolicy::store_budget.
    explicit Transaction(ConfigCache& cache);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    /// As ConfigCache::store(key, results, best), inside this transaction. The key's best is
    /// settled when a store names another key, and at commit() (so a key's rows stored in a
    /// row of calls are settled once).
    void store(const Key& key, const std::vector<Measurement>& results, const std::optional<Best>& best);
    void commit();

   private:
    ConfigCache& cache_;
    std::optional<Key> unsettled_;
    bool done_ = false;
  };

  /// Takes the lease of `key` for this object, unless another live holder has it: a key is free
  /// when no lease names it, when its lease is this object's, or when its holder is gone
  /// (holder_is_gone), its lease expired (not renewed for LeasePolicy::ttl) or it made no
  /// progress for LeasePolicy::stalled_after. A lease taken is renewed by a thread of this object
  /// (its own connection) until release() or this object's end, which releases every lease it
  /// holds. One write transaction, which waits for another process's write lock for
  /// BusyPolicy::timeout only (no retries: a lease is worth less than a sweep's results). Throws
  /// SqliteError: a busy code (is_busy) when the lock stayed held, SQLITE_READONLY for a
  /// read-only cache.
  LeaseClaim claim(const Key& key);
  /// Gives up this object's lease of `key` (nothing when it holds none, or another took it).
  void release(const Key& key);
  /// Who holds the lease of `key`, if anyone (expired leases included).
  std::optional<LeaseHolder> lease_holder(const Key& key);
  /// Tells the heartbeat that this process's tuning made progress now (a new config timed);
  /// `ongoing` (compiling, or a parent whose watchdog watches its workers): every beat counts as
  /// progress until the next call.
  void note_progress(bool ongoing);
  /// The lease times this object uses (claim judges others' leases by them too); before the first
  /// claim.
  void set_lease_policy(const LeasePolicy& policy) { lease_policy_ = policy; }
  const LeasePolicy& lease_policy() const { return lease_policy_; }

  /// Deletes the measurement of `config` and, if it is the best of `key`, the best entry too
  /// (a later run retunes the key). Returns the number of rows deleted.
  int erase(const Key& key, const std::string& config);
  /// Deletes everything stored for `key`. Returns the number of rows deleted.
  int erase(const Key& key);

  /// Every key with a best config, ordered by op then tuning key.
  std::vector<std::pair<Key, Best>> list();
  /// Every key with measurements (with or without a best), ordered by op then tuning key.
  std::vector<Key> measured_keys();

  const std::filesystem::path& path() const { return path_; }
  /// True when this process cannot write the file: every read works, every store() and
  /// erase() throws SqliteError (code SQLITE_READONLY) "config cache FILE is read-only ...".
  bool read_only() const { return db_->read_only(); }
  /// Where a damaged cache found at open was moved, if one was.
  const std::optional<std::filesystem::path>& moved_aside() const { return moved_aside_; }
  Database& database() { return *db_; }

 private:
  void open_checked(OnDamage on_damage, Access access);
  void move_aside(const std::string& problem);
  void migrate();
  void read_older_schema();
  detail::Statement& prepared(const std::string& sql);
  void store_rows(const Key& key, const std::vector<Measurement>& results, const std::optional<Best>& best);
  void require_writable(const char* action) const;
  void write_retrying(const std::function<void()>& attempt);
  void write_rows_retrying(const std::function<void()>& rows);
  void settle_best(const Key& key);
  bool stored_best_is_faster(const Key& key, const Best& incoming);
  void release_all() noexcept;

  std::filesystem::path path_;
  std::optional<Database> db_;
  std::optional<std::filesystem::path> moved_aside_;
  BusyPolicy busy_;
  LeasePolicy lease_policy_;
  std::string token_;                             // this object's leases
  std::unique_ptr<detail::Heartbeat> heartbeat_;  // from the first claim on
  bool progress_ongoing_ = false;                 // the last note_progress, for a heartbeat made later
  // Statements reused across calls (a prepare costs more than an insert: an import stores a
  // million rows). Declared after db_, so finalized before the connection closes.
  std::map<std::string, std::unique_ptr<detail::Statement>> statements_;
};

}  // namespace tunebench::cache
