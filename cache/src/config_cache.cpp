#include "tunebench/cache/config_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

namespace tunebench::cache {
namespace {

namespace fs = std::filesystem;

// Move-only owner of a prepared statement; every value is bound, never spliced into SQL.
class Statement {
 public:
  Statement(Database& db, const char* sql) : db_(db) {
    const int rc = sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) fail(rc, "prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

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
    return bind(1, k.op).bind(2, k.kernel_version).bind(3, k.tuning_key).bind(4, k.device_name)
        .bind(5, k.device_cc).bind(6, k.toolkit).bind(7, k.timing_mode);
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
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::optional<std::int64_t> opt_int64(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(stmt_, col);
  }
  Key key(int first) const {
    return {text(first), text(first + 1), text(first + 2), text(first + 3), text(first + 4), text(first + 5),
            text(first + 6)};
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(rc, "bind");
  }
  [[noreturn]] void fail(int rc, const char* what) const {
    throw SqliteError(std::string("config cache ") + what + " on " + db_.path().string() + ": " +
                          describe_error(rc, db_.handle()),
                      rc);
  }
  Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

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
constexpr const char* kKeyMatch =
    "op = ?1 AND kernel_version = ?2 AND tuning_key = ?3 AND device_name = ?4 AND device_cc = ?5 AND "
    "toolkit = ?6 AND timing_mode = ?7";

std::string this_host() {
  static const std::string name = [] {
    char text[256] = {};
    return gethostname(text, sizeof text - 1) == 0 ? std::string(text) : std::string();
  }();
  return name;
}

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
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
    case Status::kOk: return "ok";
    case Status::kCompileFailed: return "compile_failed";
    case Status::kLaunchFailed: return "launch_failed";
    case Status::kWrongResult: return "wrong_result";
    case Status::kTimeout: return "timeout";
    case Status::kUnsupported: return "unsupported";
  }
  return "unknown";
}

Status status_from_string(std::string_view text) {
  for (auto s : {Status::kOk, Status::kCompileFailed, Status::kLaunchFailed, Status::kWrongResult, Status::kTimeout,
                 Status::kUnsupported}) {
    if (to_string(s) == text) return s;
  }
  throw std::invalid_argument("status '" + std::string(text) +
                              "': expected ok, compile_failed, launch_failed, wrong_result, timeout or unsupported");
}

ConfigCache::ConfigCache(const fs::path& path, OnDamage on_damage, BusyPolicy busy) : path_(path), busy_(busy) {
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
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
  if (ec) {
    throw SqliteError("config cache " + path_.string() + ": cannot create its folder: " + ec.message(),
                      SQLITE_CANTOPEN);
  }
  if (!fs::exists(path_, ec)) {
    db_.emplace(path_, static_cast<int>(busy_.timeout.count()));  // a new file: nothing to check, and a failure here is the real error
    migrate();
    return;
  }
  open_checked(on_damage);
  migrate();
}

void ConfigCache::open_checked(OnDamage on_damage) {
  std::string problem;
  try {
    db_.emplace(path_, static_cast<int>(busy_.timeout.count()));
    const auto app = pragma_int(*db_, "PRAGMA application_id");
    const auto version = pragma_int(*db_, "PRAGMA user_version");
    const auto tables = pragma_int(*db_, "SELECT count(*) FROM sqlite_master");
    if (app != kApplicationId && !(app == 0 && version == 0 && tables == 0)) {
      problem = "is not a tunebench config cache (application_id " + std::to_string(app) + ")";
    } else if (version > kSchemaVersion) {
      problem = "was written by a newer tunebench (schema " + std::to_string(version) + ", this one reads up to " +
                std::to_string(kSchemaVersion) + ")";
    } else if (const auto integrity = db_->integrity_check(); integrity != "ok") {
      // The first problem SQLite names, whole (integrity_check lists one per line).
      problem = "fails integrity check: " + integrity.substr(0, integrity.find('\n'));
    }
  } catch (const SqliteError& e) {
    // Only a file SQLite cannot read as a database is set aside; a permission or locking
    // problem is reported as it is.
    if (e.code() != SQLITE_NOTADB && e.code() != SQLITE_CORRUPT) throw;
    problem = e.code() == SQLITE_NOTADB ? "is not an SQLite database" : "is corrupt (SQLite: database disk image is malformed)";
  }
  if (problem.empty()) return;
  for (auto& ch : problem) {
    if (ch == '\n') ch = ' ';
  }
  if (on_damage == OnDamage::kThrow) {
    db_.reset();
    throw SqliteError("config cache " + path_.string() + " " + problem +
                          " (left as it is; bench moves such a file aside and starts a fresh cache)",
                      SQLITE_CORRUPT);
  }

  db_.reset();
  fs::path aside = path_;
  aside += ".corrupt-" + std::to_string(now_s());
  for (int i = 2; fs::exists(aside); ++i) {  // never overwrite an earlier one
    aside = path_;
    aside += ".corrupt-" + std::to_string(now_s()) + "-" + std::to_string(i);
  }
  std::error_code ec;
  fs::rename(path_, aside, ec);
  if (ec) throw SqliteError("config cache " + path_.string() + " is unusable (" + problem + ") and cannot be moved aside: " + ec.message(), SQLITE_CANTOPEN);
  for (const char* suffix : {"-wal", "-shm"}) {
    fs::path side = path_;
    side += suffix;
    fs::path side_aside = aside;
    side_aside += suffix;
    if (fs::exists(side, ec)) fs::rename(side, side_aside, ec);
  }
  moved_aside_ = aside;
  std::cerr << "tunebench: WARNING: config cache " << path_.string() << " " << problem << "; moved to "
            << aside.string() << ", starting a fresh cache\n";
  db_.emplace(path_, static_cast<int>(busy_.timeout.count()));
}

void ConfigCache::migrate() {
  // Current files need no write at all, so a read-only cache can still be read.
  if (pragma_int(*db_, "PRAGMA user_version") == kSchemaVersion) return;
  WriteTransaction tx(*db_);
  auto version = pragma_int(*db_, "PRAGMA user_version");  // re-read under the write lock
  if (version < 1) {
    db_->exec(std::string("CREATE TABLE best (") + kKeyColumns +
              ", config TEXT NOT NULL, p50_ns INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (" +
              kKeyList + "))");
    db_->exec("PRAGMA application_id = " + std::to_string(kApplicationId));
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
  db_->exec("PRAGMA user_version = " + std::to_string(version));
  tx.commit();
}

std::optional<Best> ConfigCache::best(const Key& key) {
  Statement s(*db_, (std::string("SELECT config, p50_ns, updated_at FROM best WHERE ") + kKeyMatch).c_str());
  s.bind_key(key);
  if (!s.step()) return std::nullopt;
  return Best{s.text(0), s.int64(1), s.int64(2)};
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
  Statement s(*db_, (std::string(kMeasurementColumns) + kKeyMatch + " AND config = ?8").c_str());
  s.bind_key(key).bind(8, config);
  if (!s.step()) return std::nullopt;
  return read_measurement(s);
}

std::vector<Measurement> ConfigCache::measurements(const Key& key) {
  Statement s(*db_, (std::string(kMeasurementColumns) + kKeyMatch +
                     " ORDER BY status != 'ok', p50_ns, config").c_str());
  s.bind_key(key);
  std::vector<Measurement> out;
  while (s.step()) out.push_back(read_measurement(s));
  return out;
}

// SQLite would fail the first write with its own words ("attempt to write a readonly database"),
// naming neither what was being done nor what to do about it.
void ConfigCache::require_writable(const char* action) const {
  if (!read_only()) return;
  throw SqliteError("config cache " + path_.string() + " is read-only (this user cannot write the file or its folder): " +
                        "cannot " + action,
                    SQLITE_READONLY);
}

// SQLite's busy timeout covers one attempt; a lock held longer (a long import in another
// process) would throw away a sweep's results, so a store tries again, pausing longer each time.
void ConfigCache::write_retrying(const std::function<void()>& rows) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(std::max<std::int64_t>(1, busy_.timeout.count() / 20));
  for (;;) {
    try {
      WriteTransaction tx(*db_);
      rows();
      tx.commit();
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

void ConfigCache::store(const Key& key, const std::vector<Measurement>& results, const std::optional<Best>& best) {
  require_writable("store results in it");
  write_retrying([&] { store_rows(key, results, best); });
}

void ConfigCache::store(const std::vector<Entry>& entries) {
  require_writable("store results in it");
  write_retrying([&] {
    for (const auto& e : entries) store_rows(e.key, e.results, e.best);
  });
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
    Statement s(*db_, (std::string("INSERT OR REPLACE INTO measurements (") + kKeyList +
                       ", config, status, p20_ns, p50_ns, p80_ns, error, measured_at, device_uuid, host) VALUES "
                       "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)").c_str());
    s.bind_key(key).bind(8, m.config).bind(9, std::string(to_string(m.status))).bind(10, m.p20_ns)
        .bind(11, m.p50_ns).bind(12, m.p80_ns).bind(13, m.error).bind(14, m.measured_at ? m.measured_at : now_s())
        .bind(15, m.device_uuid).bind(16, m.host.empty() ? this_host() : m.host);
    s.step();
  }
  if (best) {
    Statement s(*db_, (std::string("INSERT OR REPLACE INTO best (") + kKeyList +
                       ", config, p50_ns, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)").c_str());
    s.bind_key(key).bind(8, best->config).bind(9, best->p50_ns).bind(10, best->updated_at ? best->updated_at : now_s());
    s.step();
  }
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
  Statement s(*db_, (std::string("SELECT ") + kKeyList + ", config, p50_ns, updated_at FROM best ORDER BY op, tuning_key, " +
                     kKeyList).c_str());
  std::vector<std::pair<Key, Best>> out;
  while (s.step()) out.emplace_back(s.key(0), Best{s.text(7), s.int64(8), s.int64(9)});
  return out;
}

std::vector<Key> ConfigCache::measured_keys() {
  Statement s(*db_, (std::string("SELECT DISTINCT ") + kKeyList + " FROM measurements ORDER BY op, tuning_key, " +
                     kKeyList).c_str());
  std::vector<Key> out;
  while (s.step()) out.push_back(s.key(0));
  return out;
}

}  // namespace tunebench::cache
