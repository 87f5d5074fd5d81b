#include "tunebench/cache/config_cache.hpp"

#include <unistd.h>

#include <random>

#include <algorithm>
#include <cerrno>  // program_invocation_short_name (glibc): the library's notes are the program's lines
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "heartbeat.hpp"

namespace tunebench::cache {
namespace detail {

// Owner of a prepared statement; every value is bound, never spliced into SQL.
class Statement {
 public:
  Statement(Database& db, const char* sql) : db_(db.handle()), path_(db.path().string()) {
    const int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(rc, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// Ready to run again: the last run's rows and bindings gone.
  Statement& reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, const std::optional<std::int64_t>& v) {
    check(v ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i));
    return *this;
  }
  Statement& bind_key(const Key& k) {
    return bind(1, k.op)
        .bind(2, k.kernel_version)
        .bind(3, k.tuning_key)
        .bind(4, k.device_name)
        .bind(5, k.device_cc)
        .bind(6, k.toolkit)
        .bind(7, k.timing_mode);
  }
  /// True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(rc, "step");
  }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    // The byte count, not strlen: a stored string may hold a NUL.
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<std::int64_t> opt_int64(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(stmt_, col);
  }
  Key key(int first) const {
    return {text(first),     text(first + 1), text(first + 2), text(first + 3),
            text(first + 4), text(first + 5), text(first + 6)};
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(rc, "bind");
  }
  [[noreturn]] void fail(int rc, const char* what) const {
    throw SqliteError(std::string("config cache ") + what + " on " + path_ + ": " + describe_error(rc, db_), rc);
  }
  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace detail

namespace {

namespace fs = std::filesystem;
using detail::Statement;

// BEGIN IMMEDIATE takes the write lock up front, so concurrent writers queue on the busy
// timeout instead of failing on lock upgrade; rolled back if the scope exits by exception.
class WriteTransaction {
 public:
  explicit WriteTransaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~WriteTransaction() {
    if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

 private:
  Database& db_;
  bool done_ = false;
};

std::int64_t pragma_int(Database& db, const char* pragma) {
  Statement s(db, pragma);
  return s.step() ? s.int64(0) : 0;
}

constexpr const char* kKeyColumns =
    "op TEXT NOT NULL, kernel_version TEXT NOT NULL, tuning_key TEXT NOT NULL, device_name TEXT NOT NULL, "
    "device_cc TEXT NOT NULL, toolkit TEXT NOT NULL, timing_mode TEXT NOT NULL";
constexpr const char* kKeyList = "op, kernel_version, tuning_key, device_name, device_cc, toolkit, timing_mode";
// Who holds a key's lease and until when (lease.hpp); times in Unix milliseconds.
constexpr const char* kLeaseColumns =
    "host TEXT NOT NULL, instance TEXT NOT NULL, pid INTEGER NOT NULL, started INTEGER NOT NULL, token TEXT NOT "
    "NULL, acquired_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, progress_ms INTEGER NOT NULL";
constexpr const char* kKeyMatch =
    "op = ?1 AND kernel_version = ?2 AND tuning_key = ?3 AND device_name = ?4 AND device_cc = ?5 AND "
    "toolkit = ?6 AND timing_mode = ?7";

std::string local_host() {
  static const std::string name = [] {
    char text[256] = {};
    return gethostname(text, sizeof text - 1) == 0 ? std::string(text) : std::string();
  }();
  return name;
}

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A ConfigCache object's own name among lease holders: two objects of one process (a parent's
// cache and a connection of its own) must not take each other's leases for their own.
std::string new_token() {
  std::random_device seed;
  std::mt19937_64 gen((static_cast<std::uint64_t>(seed()) << 32) ^ seed() ^ static_cast<std::uint64_t>(getpid()));
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(gen()),
                static_cast<unsigned long long>(gen()));
  return text;
}

}  // namespace

namespace {
auto fields(const Key& k) {
  return std::tie(k.op, k.kernel_version, k.tuning_key, k.device_name, k.device_cc, k.toolkit, k.timing_mode);
}
}  // namespace

bool operator==(const Key& a, const Key& b) { return fields(a) == fields(b); }

bool operator<(const Key& a, const Key& b) { return fields(a) < fields(b); }

std::string_view to_string(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kCompileFailed:
      return "compile_failed";
    case Status::kLaunchFailed:
      return "launch_failed";
    case Status::kWrongResult:
      return "wrong_result";
    case Status::kTimeout:
      return "timeout";
    case Status::kUnsupported:
      return "unsupported";
    case Status::kPruned:
      return "pruned";
  }
  return "unknown";
}

Status status_from_string(std::string_view text) {
  for (auto s : {Status::kOk, Status::kCompileFailed, Status::kLaunchFailed, Status::kWrongResult, Status::kTimeout,
                 Status::kUnsupported, Status::kPruned}) {
    if (to_string(s) == text) return s;
  }
  throw std::invalid_argument(
      "status '" + std::string(text) +
      "': expected ok, compile_failed, launch_failed, wrong_result, timeout, unsupported or pruned");
}

namespace {

// What a file at the cache's path is, found before anything is written to it.
struct Identity {
  enum Kind { kEmpty, kOurs, kForeign } kind = kForeign;
  std::string problem;  // for kForeign: what the file is, after its name
};

constexpr char kSqliteMagic[] = "SQLite format 3";  // and its NUL: the first 16 bytes

std::uint32_t big_endian(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
         static_cast<std::uint32_t>(p[2]) << 8 | static_cast<std::uint32_t>(p[3]);
}

// The columns of `table` in `db`, in order ("" when it has none).
std::string columns_of(Database& db, const std::string& table) {
  Statement s(db, ("SELECT group_concat(name, ',') FROM pragma_table_info('" + table + "')").c_str());
  return s.step() ? s.text(0) : "";
}

// The tables of a tunebench cache, as the versions before application_id was checked made them.
bool has_our_tables(Database& db) {
  std::vector<std::string> tables;
  Statement s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
  while (s.step()) tables.push_back(s.text(0));
  const std::string key = "op,kernel_version,tuning_key,device_name,device_cc,toolkit,timing_mode,";
  // Schema 4's leases, between the two in name order.
  if (tables.size() == 3) {
    if (tables[1] != "leases" ||
        columns_of(db, "leases") != key + "host,instance,pid,started,token,acquired_ms,expires_ms,progress_ms") {
      return false;
    }
    tables.erase(tables.begin() + 1);
  }
  if (tables.empty() || tables[0] != "best" || tables.size() > 2) return false;
  if (columns_of(db, "best") != key + "config,p50_ns,updated_at") return false;
  if (tables.size() == 1) return true;
  const std::string m = columns_of(db, "measurements");
  const std::string v2 = key + "config,status,p20_ns,p50_ns,p80_ns,error,measured_at,device_uuid";
  return tables[1] == "measurements" && (m == v2 || m == v2 + ",host");
}

// Whether the file (not the TEMP schema) has a table of this name.
bool has_table(Database& db, const char* name) {
  Statement s(db, "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?1");
  s.bind(1, std::string(name));
  return s.step();
}

// The table of results that a cache of schema `version` has (best from 1, measurements from 2)
// and lacks, or null. Not leases (from 4): they hold only claims of running sweeps, so a lost
// leases table is made anew (migrate, read_older_schema) and the results are kept.
const char* missing_table(Database& db, std::int64_t version) {
  if (version >= 1 && !has_table(db, "best")) return "best";
  if (version >= 2 && !has_table(db, "measurements")) return "measurements";
  return nullptr;
}

// The first `n` bytes of the file at `path` into `out`, read through SQLite's own file layer;
// false when it cannot be opened or is shorter. Not with fopen and fclose: on POSIX the first
// close of any descriptor of a file drops every record lock this process holds on it, so that
// would drop the locks of this process's open connections to the cache (another process then
// takes itself for the last one, checkpoints and deletes the WAL they still write into, and
// what they store after is lost). SQLite's layer keeps such a descriptor open while its
// connections hold locks on the file.
bool read_file_start(const fs::path& path, unsigned char* out, int n) {
  sqlite3_vfs* vfs = sqlite3_vfs_find(nullptr);
  if (!vfs) return false;
  std::vector<char> full(static_cast<std::size_t>(vfs->mxPathname) + 1);
  if (vfs->xFullPathname(vfs, path.c_str(), static_cast<int>(full.size()), full.data()) != SQLITE_OK) return false;
  std::vector<std::max_align_t> storage((static_cast<std::size_t>(vfs->szOsFile) + sizeof(std::max_align_t) - 1) /
                                        sizeof(std::max_align_t));
  auto* file = reinterpret_cast<sqlite3_file*>(storage.data());
  file->pMethods = nullptr;
  int flags = 0;
  const int opened = vfs->xOpen(vfs, full.data(), file, SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB, &flags);
  if (opened != SQLITE_OK) {
    if (file->pMethods) file->pMethods->xClose(file);
    return false;
  }
  const int read = file->pMethods->xRead(file, out, n, 0);
  file->pMethods->xClose(file);
  return read == SQLITE_OK;  // SQLITE_IOERR_SHORT_READ: the file is shorter
}

Identity identify(const fs::path& path, std::int32_t our_id, int our_version, int busy_timeout_ms) {
  std::error_code ec;
  fs::path wal = path;
  wal += "-wal";
  const bool wal_pending = fs::exists(wal, ec) && fs::file_size(wal, ec) > 0;
  if (fs::file_size(path, ec) == 0 && !ec && !wal_pending) return {Identity::kEmpty, ""};
  unsigned char header[100] = {};
  if (!read_file_start(path, header, sizeof header) || std::memcmp(header, kSqliteMagic, sizeof kSqliteMagic) != 0) {
    return {Identity::kForeign, "is not an SQLite database"};
  }
  // The header's own fields (offsets 68 and 60), for when SQLite cannot read further: a WAL
  // may hold newer ones, so SQLite's answer wins where there is one.
  const auto header_id = static_cast<std::int32_t>(big_endian(header + 68));
  try {
    Database probe(path, busy_timeout_ms, Access::kProbe);
    const std::int32_t id = probe.application_id();
    const int version = probe.user_version();
    Statement count(probe, "SELECT count(*) FROM sqlite_master");
    const auto objects = count.step() ? count.int64(0) : 0;
    const bool ours = id == our_id || (id == 0 && version >= 1 && has_our_tables(probe));
    if (id == 0 && version == 0 && objects == 0) return {Identity::kEmpty, ""};
    if (!ours) {
      char text[16];
      std::snprintf(text, sizeof text, "0x%08x", static_cast<std::uint32_t>(id));
      return {Identity::kForeign, "is not a tunebench config cache (an SQLite database with application_id " +
                                      std::string(text) + (id == 0 ? " and other tables" : "") + ")"};
    }
    if (version > our_version) {
      return {Identity::kForeign, "was written by a newer tunebench (schema " + std::to_string(version) +
                                      ", this one reads up to " + std::to_string(our_version) + ")"};
    }
    return {Identity::kOurs, ""};
  } catch (const SqliteError& e) {
    // A lock held too long, a permission: the file's state, not what it is; said as it is.
    if ((e.code() & 0xff) != SQLITE_NOTADB && (e.code() & 0xff) != SQLITE_CORRUPT) throw;
    if (header_id != our_id) {
      return {Identity::kForeign, std::string("cannot be read as an SQLite database (") + e.what() + ")"};
    }
    // Ours by its header. Whether it is damaged is for the connection that takes SQLite's locks
    // to say: the probe may have read the file alone while another process checkpointed into it.
    return {Identity::kOurs, ""};
  }
}

std::string one_line(std::string text) {
  for (auto& ch : text) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return text;
}

}  // namespace

ConfigCache::ConfigCache(const fs::path& path, OnDamage on_damage, BusyPolicy busy, Access access)
    : path_(path), busy_(busy), token_(new_token()) {
  if (access == Access::kProbe) access = Access::kRead;
  std::error_code ec;
  if (fs::is_directory(path_, ec)) {
    throw SqliteError("config cache " + path_.string() + ": is a folder, expected a file", SQLITE_CANTOPEN);
  }
  ec.clear();  // is_directory of a file not yet made sets it: not an error of the folder
  // A device, pipe or socket (/dev/null, say): SQLite would make its journal beside it.
  if (fs::exists(path_, ec) && !fs::is_regular_file(path_, ec)) {
    throw SqliteError("config cache " + path_.string() + ": is not a regular file, expected a file", SQLITE_CANTOPEN);
  }
  ec.clear();
  // A link to nothing: SQLite would try to make its target, whose folder may not exist; a link
  // left behind by a moved cache is a mistake to name, not a cache to start.
  if (fs::is_symlink(path_, ec) && !fs::exists(path_, ec)) {
    throw SqliteError("config cache " + path_.string() + ": a symbolic link to " +
                          fs::read_symlink(path_, ec).string() + ", which does not exist (expected a file or no file)",
                      SQLITE_CANTOPEN);
  }
  ec.clear();
  if (access == Access::kRead && !fs::exists(path_, ec)) {
    throw SqliteError("config cache " + path_.string() + ": no such file", SQLITE_CANTOPEN);
  }
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
  if (ec) {
    throw SqliteError("config cache " + path_.string() + ": cannot create its folder: " + ec.message(),
                      SQLITE_CANTOPEN);
  }
  if (!fs::exists(path_, ec)) {
    db_.emplace(
        path_,
        static_cast<int>(busy_.timeout.count()));  // a new file: nothing to check, and a failure here is the real error
    migrate();
    return;
  }
  open_checked(access == Access::kRead ? OnDamage::kThrow : on_damage, access);
  if (access == Access::kRead || db_->read_only()) {
    read_older_schema();
  } else {
    migrate();
  }
}

ConfigCache::~ConfigCache() { release_all(); }

void ConfigCache::open_checked(OnDamage on_damage, Access access) {
  const Identity id = identify(path_, kApplicationId, kSchemaVersion, static_cast<int>(busy_.timeout.count()));
  const std::string name = "config cache " + path_.string() + " ";
  if (id.kind == Identity::kForeign) {
    throw SqliteError(name + one_line(id.problem) + ": left as it is; point TUNEBENCH_CACHE (or --tunebench_cache, " +
                          "--cache) at another file",
                      SQLITE_NOTADB);
  }
  if (id.kind == Identity::kEmpty) {
    if (access == Access::kRead) {
      throw SqliteError(name + "is empty: not a config cache yet (bench or tunebench-cache import makes one there)",
                        SQLITE_CANTOPEN);
    }
    // A file made in the last seconds is a sibling process's new cache, not yet written: no note.
    std::error_code ec;
    const auto written = fs::last_write_time(path_, ec);
    if (ec || fs::file_time_type::clock::now() - written > std::chrono::seconds(10)) {
      std::cerr << program_invocation_short_name << ": " << name << "is an empty file: starting a new cache in it\n";
    }
  }
  std::string problem;
  try {
    db_.emplace(path_, static_cast<int>(busy_.timeout.count()), access);
    if (id.kind == Identity::kOurs) {
      if (auto integrity = db_->integrity_check(); integrity != "ok") {
        // The first problem SQLite names (Database::integrity_check joins its rows with "; "),
        // without the "*** in database main ***" heading of the first.
        if (integrity.rfind("*** in database", 0) == 0) integrity.erase(0, integrity.find('\n') + 1);
        integrity = integrity.substr(0, std::min(integrity.find('\n'), integrity.find("; ")));
        problem = "is damaged (SQLite's integrity check: " + one_line(integrity) + ")";
      } else if (const char* lost = missing_table(*db_, pragma_int(*db_, "PRAGMA user_version"))) {
        // Stamped as ours, but a table was dropped since: every read of it would fail.
        problem = std::string("is damaged (its table ") + lost + " is missing)";
      }
    }
  } catch (const SqliteError& e) {
    // Only a file SQLite cannot read as a database is damaged; a permission or locking
    // problem is reported as it is. SQLite's words for the code, not the call that met it.
    if ((e.code() & 0xff) != SQLITE_NOTADB && (e.code() & 0xff) != SQLITE_CORRUPT) throw;
    problem = std::string("is damaged (SQLite: ") + sqlite3_errstr(e.code()) + ")";
  }
  if (problem.empty()) return;
  db_.reset();
  if (on_damage == OnDamage::kThrow) {
    throw SqliteError(name + problem + " (left as it is; bench moves a damaged cache aside and starts a fresh one)",
                      SQLITE_CORRUPT);
  }
  move_aside(problem);
}

void ConfigCache::move_aside(const std::string& problem) {
  fs::path aside = path_;
  aside += ".corrupt-" + std::to_string(now_s());
  for (int i = 2; fs::exists(aside); ++i) {  // never overwrite an earlier one
    aside = path_;
    aside += ".corrupt-" + std::to_string(now_s()) + "-" + std::to_string(i);
  }
  std::error_code ec;
  fs::rename(path_, aside, ec);
  if (ec)
    throw SqliteError(
        "config cache " + path_.string() + " is unusable (" + problem + ") and cannot be moved aside: " + ec.message(),
        SQLITE_CANTOPEN);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    fs::path side = path_;
    side += suffix;
    fs::path side_aside = aside;
    side_aside += suffix;
    if (fs::exists(side, ec)) fs::rename(side, side_aside, ec);
  }
  moved_aside_ = aside;
  std::cerr << program_invocation_short_name << ": WARNING: config cache " << path_.string() << " " << problem
            << "; moved to " << aside.string() << ", starting a fresh cache\n";
  db_.emplace(path_, static_cast<int>(busy_.timeout.count()));
}

void ConfigCache::migrate() {
  // Current files need no write at all, so a read-only cache can still be read.
  if (pragma_int(*db_, "PRAGMA user_version") == kSchemaVersion &&
      pragma_int(*db_, "PRAGMA application_id") == kApplicationId && has_table(*db_, "leases")) {
    return;
  }
  WriteTransaction tx(*db_);
  auto version = pragma_int(*db_, "PRAGMA user_version");  // re-read under the write lock
  // A cache of a tunebench that made its tables without the stamp: identified by its tables
  // when opened (open_checked), stamped now so the next open knows it at once.
  db_->exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  if (version < 1) {
    db_->exec(std::string("CREATE TABLE best (") + kKeyColumns +
              ", config TEXT NOT NULL, p50_ns INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (" + kKeyList +
              "))");
    version = 1;
  }
  if (version < 2) {
    db_->exec(std::string("CREATE TABLE measurements (") + kKeyColumns +
              ", config TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'compile_failed', "
              "'launch_failed', 'wrong_result', 'timeout', 'unsupported')), p20_ns INTEGER, p50_ns INTEGER, "
              "p80_ns INTEGER, error TEXT NOT NULL DEFAULT '', measured_at INTEGER NOT NULL, "
              "device_uuid TEXT NOT NULL DEFAULT '', PRIMARY KEY (" +
              kKeyList + ", config))");
    version = 2;
  }
  if (version < 3) {
    // An added column with a default: rows of older files read as measured on an unknown host.
    db_->exec("ALTER TABLE measurements ADD COLUMN host TEXT NOT NULL DEFAULT ''");
    version = 3;
  }
  if (version < 4 || !has_table(*db_, "leases")) {  // new in 4, or lost since (missing_table)
    db_->exec(std::string("CREATE TABLE IF NOT EXISTS leases (") + kKeyColumns + ", " + kLeaseColumns +
              ", PRIMARY KEY (" + kKeyList + "))");
    version = std::max<std::int64_t>(version, 4);
  }
  if (version < 5) {
    // The status 'pruned': SQLite cannot change a CHECK in place, so the table is made anew
    // with every row copied, in this transaction.
    db_->exec(std::string("CREATE TABLE measurements_v5 (") + kKeyColumns +
              ", config TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'compile_failed', "
              "'launch_failed', 'wrong_result', 'timeout', 'unsupported', 'pruned')), p20_ns INTEGER, p50_ns INTEGER, "
              "p80_ns INTEGER, error TEXT NOT NULL DEFAULT '', measured_at INTEGER NOT NULL, "
              "device_uuid TEXT NOT NULL DEFAULT '', host TEXT NOT NULL DEFAULT '', PRIMARY KEY (" +
              kKeyList + ", config))");
    db_->exec("INSERT INTO measurements_v5 SELECT * FROM measurements");
    db_->exec("DROP TABLE measurements");
    db_->exec("ALTER TABLE measurements_v5 RENAME TO measurements");
    version = 5;
  }
  db_->exec("PRAGMA user_version = " + std::to_string(version));
  tx.commit();
}

Statement& ConfigCache::prepared(const std::string& sql) {
  auto& slot = statements_[sql];
  if (!slot) slot = std::make_unique<Statement>(*db_, sql.c_str());
  return slot->reset();
}

void ConfigCache::read_older_schema() {
  // Opened without writing (Access::kRead, or a file this user cannot write): an older schema
  // is not migrated but shown as the current one, through a TEMP table or view of the same name,
  // which SQLite resolves before the file's own (unqualified names search temp first).
  const auto version = pragma_int(*db_, "PRAGMA user_version");
  const bool has_leases = version >= 4 && has_table(*db_, "leases");
  if (!has_leases) db_->exec(std::string("CREATE TEMP TABLE leases (") + kKeyColumns + ", " + kLeaseColumns + ")");
  if (version >= 4) return;  // schema 5 changed only what a write may store
  if (version >= 3) return;
  if (version < 2) {
    db_->exec(std::string("CREATE TEMP TABLE measurements (") + kKeyColumns +
              ", config TEXT NOT NULL, status TEXT NOT NULL, p20_ns INTEGER, p50_ns INTEGER, p80_ns INTEGER, "
              "error TEXT NOT NULL DEFAULT '', measured_at INTEGER NOT NULL, device_uuid TEXT NOT NULL DEFAULT '', "
              "host TEXT NOT NULL DEFAULT '')");
  } else {
    db_->exec("CREATE TEMP VIEW measurements AS SELECT *, '' AS host FROM main.measurements");
  }
}

std::optional<Best> ConfigCache::best(const Key& key) {
  Statement& s = prepared(std::string("SELECT config, p50_ns, updated_at FROM best WHERE ") + kKeyMatch);
  s.bind_key(key);
  if (!s.step()) return std::nullopt;
  Best b{s.text(0), s.int64(1), s.int64(2)};
  s.reset();  // a statement left on a row holds its read snapshot: later writes would find it stale
  return b;
}

namespace {

Measurement read_measurement(const Statement& s) {
  Measurement m;
  m.config = s.text(0);
  m.status = status_from_string(s.text(1));
  m.p20_ns = s.opt_int64(2);
  m.p50_ns = s.opt_int64(3);
  m.p80_ns = s.opt_int64(4);
  m.error = s.text(5);
  m.measured_at = s.int64(6);
  m.device_uuid = s.text(7);
  m.host = s.text(8);
  return m;
}

constexpr const char* kMeasurementColumns =
    "SELECT config, status, p20_ns, p50_ns, p80_ns, error, measured_at, device_uuid, host FROM measurements WHERE ";

}  // namespace

std::optional<Measurement> ConfigCache::measurement(const Key& key, const std::string& config) {
  Statement& s = prepared(std::string(kMeasurementColumns) + kKeyMatch + " AND config = ?8");
  s.bind_key(key).bind(8, config);
  if (!s.step()) return std::nullopt;
  Measurement m = read_measurement(s);
  s.reset();
  return m;
}

std::vector<Measurement> ConfigCache::measurements(const Key& key) {
  std::vector<Measurement> out;
  for_each_measurement(key, [&](const Measurement& m) { out.push_back(m); });
  return out;
}

void ConfigCache::for_each_measurement(const Key& key, const std::function<void(const Measurement&)>& fn) {
  // Its own statement, not a prepared() one: `fn` may read the cache meanwhile.
  Statement s(*db_,
              (std::string(kMeasurementColumns) + kKeyMatch + " ORDER BY status != 'ok', p50_ns, config").c_str());
  s.bind_key(key);
  while (s.step()) fn(read_measurement(s));
}

void ConfigCache::for_each_key(const std::function<void(const Key&)>& fn) {
  // UNION removes the keys both tables hold; SQLite sorts through its page cache and temporary
  // files, not in memory as a whole.
  Statement s(*db_, (std::string("SELECT ") + kKeyList + " FROM (SELECT " + kKeyList +
                     " FROM measurements UNION SELECT " + kKeyList + " FROM best) ORDER BY op, tuning_key, " + kKeyList)
                        .c_str());
  while (s.step()) fn(s.key(0));
}

// SQLite would fail the first write with its own words ("attempt to write a readonly database"),
// naming neither what was being done nor what to do about it.
void ConfigCache::require_writable(const char* action) const {
  if (!read_only()) return;
  throw SqliteError("config cache " + path_.string() +
                        " is read-only (this user cannot write the file or its folder): " + "cannot " + action,
                    SQLITE_READONLY);
}

// SQLite's busy timeout covers one attempt; a lock held longer (a long import in another
// process) would throw away a sweep's results, so a store tries again, pausing longer each time.
void ConfigCache::write_retrying(const std::function<void()>& attempt) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(std::max<std::int64_t>(1, busy_.timeout.count() / 20));
  for (;;) {
    try {
      attempt();
      return;
    } catch (const SqliteError& e) {
      if (!is_busy(e.code())) throw;
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited + pause > busy_.store_budget) {
        const auto s = std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() / 1000.0;
        char waited_text[32];
        std::snprintf(waited_text, sizeof waited_text, "%.1f", s);
        throw SqliteError("config cache " + path_.string() + " is locked by another process (waited " + waited_text +
                              " s for its write lock): " + e.what(),
                          e.code());
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(5000));
    }
  }
}

void ConfigCache::write_rows_retrying(const std::function<void()>& rows) {
  write_retrying([&] {
    WriteTransaction tx(*db_);
    rows();
    tx.commit();
  });
}

ConfigCache::Transaction::Transaction(ConfigCache& cache) : cache_(cache) {
  cache_.require_writable("store results in it");
  cache_.write_retrying([&] { cache_.db_->exec("BEGIN IMMEDIATE"); });
}

ConfigCache::Transaction::~Transaction() {
  if (!done_) sqlite3_exec(cache_.db_->handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void ConfigCache::Transaction::store(const Key& key, const std::vector<Measurement>& results,
                                     const std::optional<Best>& best) {
  if (unsettled_ && !(*unsettled_ == key)) cache_.settle_best(*unsettled_);
  unsettled_ = key;
  cache_.store_rows(key, results, best);
}

void ConfigCache::Transaction::commit() {
  if (unsettled_) cache_.settle_best(*unsettled_);
  unsettled_.reset();
  cache_.db_->exec("COMMIT");
  done_ = true;
}

void ConfigCache::store(const Key& key, const std::vector<Measurement>& results, const std::optional<Best>& best) {
  require_writable("store results in it");
  write_rows_retrying([&] {
    store_rows(key, results, best);
    settle_best(key);
  });
}

void ConfigCache::store(const std::vector<Entry>& entries) {
  require_writable("store results in it");
  write_rows_retrying([&] {
    for (const auto& e : entries) store_rows(e.key, e.results, e.best);
    for (const auto& e : entries) settle_best(e.key);  // a key of two entries (two shards) is settled on both
  });
}

// Inside a write transaction: the best of `key` made true to the measurements the file holds (the
// rule in config_cache.hpp), whoever wrote them.
void ConfigCache::settle_best(const Key& key) {
  Statement& b = prepared(std::string("SELECT config FROM best WHERE ") + kKeyMatch);
  b.bind_key(key);
  if (!b.step()) return;
  const std::string config = b.text(0);
  b.reset();
  Statement& own = prepared(std::string("SELECT status FROM measurements WHERE ") + kKeyMatch + " AND config = ?8");
  own.bind_key(key).bind(8, config);
  const bool failed = own.step() && own.text(0) != "ok";
  own.reset();
  // Only a best whose own measurement failed is re-chosen: a sweep's winner is not second-guessed
  // by the other rows of its key, which include configs a race dropped after one or two runs
  // (store_rows weighs one sweep's winner against another's).
  if (!failed) return;
  Statement& f = prepared(std::string("SELECT config, p50_ns FROM measurements WHERE ") + kKeyMatch +
                          " AND status = 'ok' AND p50_ns > 0 ORDER BY p50_ns, config LIMIT 1");
  f.bind_key(key);
  std::optional<std::pair<std::string, std::int64_t>> fastest;
  if (f.step()) fastest.emplace(f.text(0), f.int64(1));
  f.reset();
  if (fastest) {
    Statement& s = prepared(std::string("INSERT OR REPLACE INTO best (") + kKeyList +
                            ", config, p50_ns, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    s.bind_key(key).bind(8, fastest->first).bind(9, fastest->second).bind(10, now_s());
    s.step();
  } else {
    Statement& s = prepared(std::string("DELETE FROM best WHERE ") + kKeyMatch);
    s.bind_key(key);
    s.step();
  }
}

LeaseClaim ConfigCache::claim(const Key& key) {
  require_writable("take a lease in it");
  LeaseClaim out;
  const LeaseHolder me = this_process();
  // One attempt, waiting BusyPolicy::timeout for the lock: a lease is worth less than a sweep's
  // results, which are worth the store's longer retries.
  [&] {
    WriteTransaction tx(*db_);
    out = LeaseClaim();
    if (auto held = lease_holder(key); held && held->token != token_) {
      const std::int64_t now = unix_ms();
      const auto seconds = [](std::int64_t ms) { return std::to_string((ms + 999) / 1000); };
      if (holder_is_gone(*held)) {
        out.why = "its process is gone";
      } else if (now > held->expires_ms) {
        out.why = "its lease was not renewed for " + seconds(now - held->expires_ms + lease_policy_.ttl.count()) +
                  " s (its process or host stopped)";
      } else if (now - held->progress_ms > lease_policy_.stalled_after.count()) {
        out.why = "it made no progress for " + seconds(now - held->progress_ms) + " s";
      } else {
        out.outcome = LeaseClaim::Outcome::kHeldByOther;
        out.holder = std::move(held);
        return;  // nothing written: the transaction rolls back
      }
      out.outcome = LeaseClaim::Outcome::kTakenOver;
      out.holder = std::move(held);
    }
    const std::int64_t now = unix_ms();
    Statement& s = prepared(std::string("INSERT OR REPLACE INTO leases (") + kKeyList +
                            ", host, instance, pid, started, token, acquired_ms, expires_ms, progress_ms) VALUES "
                            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
    s.bind_key(key)
        .bind(8, me.host)
        .bind(9, me.instance)
        .bind(10, me.pid)
        .bind(11, me.started)
        .bind(12, token_)
        .bind(13, now)
        .bind(14, now + lease_policy_.ttl.count())
        .bind(15, now);  // taking a key is progress
    s.step();
    tx.commit();
  }();
  if (!out.ours()) return out;
  if (!heartbeat_) {
    heartbeat_ = std::make_unique<detail::Heartbeat>(path_, token_, lease_policy_);
    heartbeat_->progress(progress_ongoing_);  // said before the first claim
  }
  heartbeat_->touch();
  return out;
}

void ConfigCache::release(const Key& key) {
  if (!heartbeat_) return;  // never claimed anything
  write_retrying([&] {
    Statement& s = prepared(std::string("DELETE FROM leases WHERE ") + kKeyMatch + " AND token = ?8");
    s.bind_key(key).bind(8, token_);
    s.step();
  });
}

void ConfigCache::release_all() noexcept {
  if (!heartbeat_ || !db_) return;
  heartbeat_.reset();
  // Best effort: a lease left behind (a lock held past the busy timeout) names a process that is
  // about to be gone, which the next claim sees.
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_->handle(), "DELETE FROM leases WHERE token = ?1", -1, &s, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, token_.data(), static_cast<int>(token_.size()), SQLITE_TRANSIENT);
    sqlite3_step(s);
  }
  sqlite3_finalize(s);
}

std::optional<LeaseHolder> ConfigCache::lease_holder(const Key& key) {
  Statement& s = prepared(
      std::string(
          "SELECT host, instance, pid, started, token, acquired_ms, expires_ms, progress_ms FROM leases WHERE ") +
      kKeyMatch);
  s.bind_key(key);
  if (!s.step()) return std::nullopt;
  LeaseHolder h{s.text(0), s.text(1), s.int64(2), s.int64(3), s.text(4), s.int64(5), s.int64(6), s.int64(7)};
  s.reset();
  return h;
}

void ConfigCache::note_progress(bool ongoing) {
  progress_ongoing_ = ongoing;
  if (heartbeat_) heartbeat_->progress(ongoing);
}

std::vector<ConfigCache::Entry> ConfigCache::entries() {
  std::vector<Entry> out;
  for (const auto& k : measured_keys()) out.push_back({k, measurements(k), best(k)});
  for (const auto& [k, b] : list()) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Entry& e) { return e.key == k; });
    if (!seen) out.push_back({k, {}, b});
  }
  return out;
}

void ConfigCache::store_rows(const Key& key, const std::vector<Measurement>& results, const std::optional<Best>& best) {
  for (const auto& m : results) {
    // A pruned row was not run here: an earlier time or failure of the config says more.
    const char* verb = m.status == Status::kPruned ? "INSERT OR IGNORE" : "INSERT OR REPLACE";
    Statement& s = prepared(std::string(verb) + " INTO measurements (" + kKeyList +
                            ", config, status, p20_ns, p50_ns, p80_ns, error, measured_at, device_uuid, host) VALUES "
                            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    s.bind_key(key)
        .bind(8, m.config)
        .bind(9, std::string(to_string(m.status)))
        .bind(10, m.p20_ns)
        .bind(11, m.p50_ns)
        .bind(12, m.p80_ns)
        .bind(13, m.error)
        .bind(14, m.measured_at ? m.measured_at : now_s())
        .bind(15, m.device_uuid)
        .bind(16, m.host.empty() ? local_host() : m.host);
    s.step();
  }
  if (best && !stored_best_is_faster(key, *best)) {
    Statement& s = prepared(std::string("INSERT OR REPLACE INTO best (") + kKeyList +
                            ", config, p50_ns, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    s.bind_key(key).bind(8, best->config).bind(9, best->p50_ns).bind(10, best->updated_at ? best->updated_at : now_s());
    s.step();
  }
}

// Inside a write transaction, after this write's measurements: whether the best the file holds
// (another sweep's winner) is faster than `incoming` by more than the tie band, each judged by its
// config's latest ok measurement (the incoming one by its own p50 where it has none). An untimed
// best (p50 0: one candidate) is never faster; a stored best whose measurement failed is not.
bool ConfigCache::stored_best_is_faster(const Key& key, const Best& incoming) {
  Statement& b = prepared(std::string("SELECT config, p50_ns FROM best WHERE ") + kKeyMatch);
  b.bind_key(key);
  if (!b.step()) return false;
  const std::string config = b.text(0);
  std::int64_t stored_p50 = b.int64(1);
  b.reset();
  if (config == incoming.config) return false;
  if (const auto own = measurement(key, config)) {
    if (own->status != Status::kOk) return false;
    if (own->p50_ns && *own->p50_ns > 0) stored_p50 = *own->p50_ns;
  }
  std::int64_t incoming_p50 = incoming.p50_ns;
  if (const auto own = measurement(key, incoming.config);
      own && own->status == Status::kOk && own->p50_ns && *own->p50_ns > 0) {
    incoming_p50 = *own->p50_ns;
  }
  if (stored_p50 <= 0 || incoming_p50 <= 0) return false;
  return static_cast<double>(stored_p50) * (1.0 + kTieTolerance) < static_cast<double>(incoming_p50);
}

int ConfigCache::erase(const Key& key, const std::string& config) {
  require_writable("evict from it");
  WriteTransaction tx(*db_);
  Statement m(*db_, (std::string("DELETE FROM measurements WHERE ") + kKeyMatch + " AND config = ?8").c_str());
  m.bind_key(key).bind(8, config);
  m.step();
  int deleted = sqlite3_changes(db_->handle());
  Statement b(*db_, (std::string("DELETE FROM best WHERE ") + kKeyMatch + " AND config = ?8").c_str());
  b.bind_key(key).bind(8, config);
  b.step();
  deleted += sqlite3_changes(db_->handle());
  tx.commit();
  return deleted;
}

int ConfigCache::erase(const Key& key) {
  require_writable("evict from it");
  WriteTransaction tx(*db_);
  int deleted = 0;
  for (const char* table : {"measurements", "best"}) {
    Statement s(*db_, (std::string("DELETE FROM ") + table + " WHERE " + kKeyMatch).c_str());
    s.bind_key(key);
    s.step();
    deleted += sqlite3_changes(db_->handle());
  }
  tx.commit();
  return deleted;
}

std::vector<std::pair<Key, Best>> ConfigCache::list() {
  Statement s(*db_, (std::string("SELECT ") + kKeyList +
                     ", config, p50_ns, updated_at FROM best ORDER BY op, tuning_key, " + kKeyList)
                        .c_str());
  std::vector<std::pair<Key, Best>> out;
  while (s.step()) out.emplace_back(s.key(0), Best{s.text(7), s.int64(8), s.int64(9)});
  return out;
}

std::vector<Key> ConfigCache::measured_keys() {
  Statement s(
      *db_,
      (std::string("SELECT DISTINCT ") + kKeyList + " FROM measurements ORDER BY op, tuning_key, " + kKeyList).c_str());
  std::vector<Key> out;
  while (s.step()) out.push_back(s.key(0));
  return out;
}

std::string this_host() { return local_host(); }

}  // namespace tunebench::cache
