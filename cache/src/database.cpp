#include "tunebench/cache/database.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

namespace tunebench::cache {
namespace {

[[noreturn]] void fail(sqlite3* db, int rc, const std::string& call, const std::filesystem::path& path) {
  throw SqliteError(call + " on " + path.string() + ": " + describe_error(rc, db), rc);
}

// The "file:" URI of `path` with `query`, for SQLITE_OPEN_URI: absolute (an empty authority
// before it), with the characters a URI gives a meaning percent-encoded.
std::string file_uri(const std::filesystem::path& path, const char* query) {
  std::string uri = "file://";
  for (const char c : std::filesystem::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#') {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
      uri += escaped;
    } else {
      uri += c;
    }
  }
  return uri + "?" + query;
}

int probe_read(sqlite3* db) {
  return sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
}

// The name to give sqlite3_open_v2 for `path`, read as a plain path whatever the library's
// default: built with SQLITE_USE_URI (or configured with SQLITE_CONFIG_URI), SQLite takes a name
// starting with "file:" as a URI even without SQLITE_OPEN_URI ("file:x?mode=memory" would cache
// nothing). "./" in front keeps it the file of that name.
std::string plain_name(const std::filesystem::path& path) {
  const std::string name = path.string();
  return name.rfind("file:", 0) == 0 ? "./" + name : name;
}

bool writable(const std::filesystem::path& path) { return ::access(path.c_str(), W_OK) == 0; }

// The folder a new file `path` would be made in.
std::filesystem::path folder_of(const std::filesystem::path& path) {
  return std::filesystem::absolute(path).parent_path();
}

}  // namespace

bool is_busy(int code) { return (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED; }

std::string describe_error(int rc, sqlite3* db) {
  std::string text = sqlite3_errstr(rc);
  if (!db) return text;
  // sqlite3_errmsg repeats sqlite3_errstr unless it has more to say (the SQL's error, say).
  const std::string detail = sqlite3_errmsg(db);
  if (!detail.empty() && detail != text) text += " (" + detail + ")";
  return text;
}

Database::Database(const std::filesystem::path& path, int busy_timeout_ms, Access access) : path_(path) {
  std::error_code ec;
  std::filesystem::path wal = path;
  wal += "-wal";
  const bool wal_pending = std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0;
  if (access == Access::kProbe) {
    // immutable=1 reads the file alone and makes nothing beside it; only transactions still in
    // a -wal need mode=ro, which reads them through the -shm that is there with it.
    open_read_only(wal_pending ? std::vector<const char*>{"mode=ro"} : std::vector<const char*>{"immutable=1"},
                   busy_timeout_ms, wal_pending, "looking at it");
    return;
  }
  if (access == Access::kRead) {
    // mode=ro takes SQLite's locks, so a writer in another process never shows a torn state;
    // another user's file is read alone, as below, so nothing is made beside it.
    std::vector<const char*> queries{"mode=ro"};
    if (!wal_pending) queries.insert(writable(path) ? queries.end() : queries.begin(), "immutable=1");
    open_read_only(queries, busy_timeout_ms, wal_pending, "opened read-only");
    return;
  }
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const bool exists = std::filesystem::exists(path, ec);
  if (exists && !writable(path)) {
    // Another user's file: opened read-write, SQLite would still make a -shm (and an empty -wal)
    // beside it in a folder this user can write. immutable=1 reads the file alone; only while a
    // non-empty -wal holds transactions the file lacks is mode=ro (through the -shm) needed.
    open_read_only(
        wal_pending ? std::vector<const char*>{"mode=ro"} : std::vector<const char*>{"immutable=1", "mode=ro"},
        busy_timeout_ms, wal_pending, "it cannot be written");
    return;
  }
  const int rc = sqlite3_open_v2(plain_name(path).c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3* db = std::exchange(db_, nullptr);
    std::string msg = std::string("sqlite3_open_v2 on ") + path.string() + ": " + describe_error(rc, db);
    sqlite3_close(db);
    if (!exists && !writable(folder_of(path))) {
      msg = "cannot create " + path.string() + ": its folder " + folder_of(path).string() +
            " is not writable by this user (" + msg + ")";
    }
    throw SqliteError(msg, rc);
  }
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  // Two processes opening a new file together both switch it to WAL, and SQLite answers the
  // switch's lock upgrade with SQLITE_BUSY at once, without its busy handler (it could deadlock):
  // so the switch is retried here, for as long as the busy timeout.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  for (int attempt = 0;; ++attempt) {
    try {
      exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
      break;
    } catch (const SqliteError& e) {
      const int primary = e.code() & 0xff;
      if ((primary == SQLITE_BUSY || primary == SQLITE_LOCKED) && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 5 + 5 * attempt)));
        continue;
      }
      // A read-only file or folder cannot switch to WAL; reading still works.
      if (e.code() != SQLITE_READONLY && e.code() != SQLITE_CANTOPEN) {
        sqlite3_close(std::exchange(db_, nullptr));
        throw;
      }
      break;
    }
  }
  const int rc_read = probe_read(db_);
  if (rc_read != SQLITE_READONLY && rc_read != SQLITE_CANTOPEN) return;
  // A WAL file in a folder this process cannot write: a reader needs the -shm index beside it,
  // which SQLite cannot create there (sqlite.org/wal.html, read-only databases). mode=ro reads
  // through an -shm that exists; immutable=1 reads the file alone, which is only right while
  // no -wal holds transactions not yet copied into it.
  sqlite3_close(std::exchange(db_, nullptr));
  open_read_only(wal_pending ? std::vector<const char*>{"mode=ro"} : std::vector<const char*>{"mode=ro", "immutable=1"},
                 busy_timeout_ms, wal_pending, "its folder cannot be written, and it is in WAL mode");
}

void Database::open_read_only(const std::vector<const char*>& queries, int busy_timeout_ms, bool wal_pending,
                              const std::string& why) {
  int rc_read = SQLITE_CANTOPEN;
  for (const char* query : queries) {
    sqlite3_close(std::exchange(db_, nullptr));
    const int rc_open =
        sqlite3_open_v2(file_uri(path_, query).c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
    // The timeout before the first read: a WAL reader may have to wait for a writer's recovery.
    if (rc_open == SQLITE_OK) sqlite3_busy_timeout(db_, busy_timeout_ms);
    rc_read = rc_open == SQLITE_OK ? probe_read(db_) : rc_open;
    if (rc_read == SQLITE_OK) return;
  }
  const std::string msg = "reading " + path_.string() + " (" + why +
                          (wal_pending ? ", with a -wal file not yet checkpointed" : "") +
                          "): " + describe_error(rc_read, db_);
  sqlite3_close(std::exchange(db_, nullptr));
  throw SqliteError(msg, rc_read);
}

bool Database::read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

Database::Database(Database&& other) noexcept : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string detail = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError("'" + sql + "' on " + path_.string() + ": " + detail, rc);
  }
}

int Database::user_version() {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, "PRAGMA user_version", path_);
  rc = sqlite3_step(stmt);
  const int version = rc == SQLITE_ROW ? sqlite3_column_int(stmt, 0) : 0;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW) fail(db_, rc, "PRAGMA user_version", path_);
  return version;
}

std::int32_t Database::application_id() {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, "PRAGMA application_id", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, "PRAGMA application_id", path_);
  rc = sqlite3_step(stmt);
  const auto id = rc == SQLITE_ROW ? static_cast<std::int32_t>(sqlite3_column_int(stmt, 0)) : 0;
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW) fail(db_, rc, "PRAGMA application_id", path_);
  return id;
}

std::string Database::integrity_check() {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, "PRAGMA integrity_check", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, "PRAGMA integrity_check", path_);
  std::string result;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (!result.empty()) result += "; ";
    result += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) fail(db_, rc, "PRAGMA integrity_check", path_);
  return result;
}

namespace {

// A variable that is set but empty counts as unset.
const char* set(const char* v) { return v && *v ? v : nullptr; }

}  // namespace

std::filesystem::path tunebench_cache_home(const char* override_var, const CacheLocationEnv& env) {
  if (const char* p = set(env.xdg_cache_home); p && std::filesystem::path(p).is_absolute()) {
    return std::filesystem::path(p) / "tunebench";
  }
  if (const char* p = set(env.home)) return std::filesystem::path(p) / ".cache" / "tunebench";
  throw std::runtime_error(std::string("no cache location: set ") + override_var + ", XDG_CACHE_HOME or HOME");
}

std::filesystem::path default_cache_path(const CacheLocationEnv& env) {
  if (const char* p = set(env.tunebench_cache)) return p;
  return tunebench_cache_home("TUNEBENCH_CACHE", env) / "configs.sqlite";
}

}  // namespace tunebench::cache
