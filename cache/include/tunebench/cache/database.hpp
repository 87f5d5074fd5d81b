#pragma once
// The SQLite handle the config cache is built on, and where the cache lives by default.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunebench::cache {

/// An SQLite call that failed. what() is one line: the call, the file, SQLite's result name and
/// message (sqlite3_errstr / sqlite3_errmsg).
class SqliteError : public std::runtime_error {
 public:
  SqliteError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  /// The SQLite result code (SQLITE_BUSY, SQLITE_CORRUPT, ...).
  int code() const { return code_; }

 private:
  int code_;
};

/// True for the result codes of a lock held by another connection (SQLITE_BUSY, SQLITE_LOCKED,
/// extended codes included): waiting may help, unlike any other failure.
bool is_busy(int code);

/// SQLite's name of result `rc` (sqlite3_errstr), followed in parentheses by the connection's
/// message (sqlite3_errmsg) when `db` is given and the message says more than the name.
std::string describe_error(int rc, sqlite3* db);

/// How a Database opens its file.
enum class Access {
  /// Read-write, created if missing, switched to write-ahead logging (see Database).
  kReadWrite,
  /// Read-only through SQLite's locks (URI mode=ro), falling back to the file alone
  /// (immutable=1) where that fails: the file is never written, though SQLite may make the
  /// -wal and -shm a WAL reader needs beside it. For inspecting a cache known to be ours.
  kRead,
  /// Read-only and nothing made beside the file: immutable=1 (the file alone), or mode=ro
  /// through the existing -wal and -shm while a non-empty -wal holds transactions the file
  /// lacks. For looking at a file that may not be ours.
  kProbe,
};

/// The move-only owner of one sqlite3 connection, opened read-write (created if missing) with
/// write-ahead logging and a busy timeout, so several processes can share one file.
class Database {
 public:
  /// Opens `path` with `access`. kRead and kProbe need an existing file and throw SqliteError
  /// when SQLite cannot read it; the rest of this comment is about kReadWrite.
  /// Opens or creates `path` (its parent folders too); `path` is a file name, never an SQLite
  /// URI ("file:x" is the file of that name). A file this user cannot write is opened
  /// read-only (read_only()) as an immutable file, so nothing is created beside it, or, while
  /// a non-empty -wal holds transactions the file lacks, through its -shm; a writable file in a
  /// folder where the WAL's -shm cannot be created likewise. Throws SqliteError if it cannot be
  /// opened or read (naming the folder when a new file cannot be made in it), or
  /// std::filesystem::filesystem_error if the folder cannot be created.
  explicit Database(const std::filesystem::path& path, int busy_timeout_ms = 10000, Access access = Access::kReadWrite);
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  /// Runs one or more SQL statements without results. Throws SqliteError quoting the SQL.
  void exec(const std::string& sql);
  /// PRAGMA user_version: the schema version this file was written with.
  int user_version();
  /// PRAGMA application_id: which application's file this is (0: none stamped).
  std::int32_t application_id();
  /// Result of PRAGMA integrity_check: "ok" when the file is sound.
  std::string integrity_check();

  /// True when the connection cannot write (sqlite3_db_readonly): SQLite opens a file the
  /// process may not write read-only instead of failing.
  bool read_only() const;

  sqlite3* handle() const { return db_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  // Opens path_ read-only through the first of the file: URI `queries` ("mode=ro",
  // "immutable=1") that reads; else throws SqliteError saying `why` it was read-only.
  void open_read_only(const std::vector<const char*>& queries, int busy_timeout_ms, bool wal_pending,
                      const std::string& why);

  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

/// The environment variables the default cache locations follow, as the caller read them
/// (nullptr: unset). The library reads no environment itself: bench passes its settings
/// table's values, the tunebench-cache tool its own.
struct CacheLocationEnv {
  const char* tunebench_cache = nullptr;  ///< TUNEBENCH_CACHE
  const char* xdg_cache_home = nullptr;   ///< XDG_CACHE_HOME
  const char* home = nullptr;             ///< HOME
};

/// tunebench's folder in the user's cache directory: $XDG_CACHE_HOME/tunebench, else
/// $HOME/.cache/tunebench (XDG Base Directory Specification; a relative XDG_CACHE_HOME is
/// ignored, as the specification requires). Throws std::runtime_error naming `override_var`
/// (the variable that would have avoided the lookup) when neither is usable.
std::filesystem::path tunebench_cache_home(const char* override_var, const CacheLocationEnv& env);

/// The cache file: $TUNEBENCH_CACHE if set, else $XDG_CACHE_HOME/tunebench/configs.sqlite,
/// else $HOME/.cache/tunebench/configs.sqlite (XDG Base Directory Specification). A variable set
/// to the empty string counts as unset (tunebench's rule, and the specification's). Throws
/// std::runtime_error when none of these variables is usable.
std::filesystem::path default_cache_path(const CacheLocationEnv& env);

}  // namespace tunebench::cache
