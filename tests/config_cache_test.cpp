#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "cache_text.hpp"
#include "ops.hpp"
#include "tunebench/cache/config_cache.hpp"

namespace fs = std::filesystem;
using tunebench::cache::Best;
using tunebench::cache::ConfigCache;
using tunebench::cache::Key;
using tunebench::cache::LeaseClaim;
using tunebench::cache::LeasePolicy;
using tunebench::cache::Measurement;
using tunebench::cache::Status;

namespace {

class ConfigCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tunebench_cache_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    file_ = dir_ / "configs.sqlite";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static Key key(const std::string& tuning_key = "M=8,N=4096,K=4096") {
    return {"mxfp4_gemm", "k1", tuning_key, "NVIDIA H200", "9.0", "cuda 13.0", "kernel"};
  }
  static Measurement ok(const std::string& config, std::int64_t p50) {
    return {config, Status::kOk, p50 - 10, p50, p50 + 10, "", 0, "GPU-1", ""};
  }
  // The i-th config of the default space of bench's op `op`: what an import accepts.
  static std::string config_of(const std::string& op, std::size_t i) {
    for (const auto& o : tunebench::bench::builtin_ops()) {
      if (o->name() == op) return o->config_space(tunebench::SpaceKind::kDefault).at(i).str();
    }
    ADD_FAILURE() << "no op " << op;
    return "";
  }
  // Runs tunebench-cache on this test's cache with `args`; its stdout and stderr into `out`.
  int cli(const std::string& args, std::string* out = nullptr) const {
    const std::string cmd = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + file_.string() + "' " + args +
                            " > '" + (dir_ / "out.txt").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    if (out) {
      std::ifstream f(dir_ / "out.txt", std::ios::binary);
      *out = std::string(std::istreambuf_iterator<char>(f), {});
    }
    return WEXITSTATUS(rc);
  }

  fs::path dir_, file_;
};

std::string bytes(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Runs `sql` on `file` through SQLite alone, in its default rollback-journal mode, as another
// application (or an older tunebench) would.
void make_sqlite(const fs::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << " in " << sql;
  sqlite3_free(err);
  sqlite3_close(db);
}

std::size_t count_aside(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    n += e.path().filename().string().find(".corrupt-") != std::string::npos &&
         e.path().filename().string().find("-wal") == std::string::npos &&
         e.path().filename().string().find("-shm") == std::string::npos;
  }
  return n;
}

// Runs `body` in a child process that cannot write what it does not own: as nobody when the
// tests run as root, which writes a mode 444 file all the same. Returns 0 when body returned ""
// (else it prints what body returned and returns 1), 77 when privileges could not be dropped.
int as_unprivileged(const std::function<std::string()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) std::_Exit(77);
    std::string problem;
    try {
      problem = body();
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what();
    }
    if (!problem.empty()) std::fprintf(stderr, "%s\n", problem.c_str());
    std::_Exit(problem.empty() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// A second handle on the cache in one process (bench's sweep stores finished keys through its
// own while the main one stays open) must not drop the first one's file locks: POSIX record
// locks go with the first close of any descriptor of the file, and without them another
// process closing its connection takes itself for the last one and checkpoints and deletes the
// WAL the first handle still writes into; what it stores after is lost.
TEST_F(ConfigCacheTest, ASecondHandleInOneProcessKeepsTheFirstOnesLocks) {
  ConfigCache first(file_);
  first.store(key("M=1,N=64,K=64"), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  { ConfigCache second(file_); }
  // Another process (not a fork: it would inherit this one's SQLite state) opens and closes the
  // cache read-write, as a bench that finds its keys cached does.
  const std::string other =
      "python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
      "c.execute(\"SELECT count(*) FROM best\").fetchall(); c.close()' '" +
      file_.string() + "'";
  ASSERT_EQ(std::system(other.c_str()), 0) << other;
  first.store(key("M=2,N=64,K=64"), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  EXPECT_TRUE(fs::exists(fs::path(file_.string() + "-wal")));  // the open handle's WAL stayed
  ConfigCache reader(file_);
  EXPECT_TRUE(reader.best(key("M=1,N=64,K=64")));
  EXPECT_TRUE(reader.best(key("M=2,N=64,K=64")));
}

TEST_F(ConfigCacheTest, StoreGetAndEraseAreReal) {
  ConfigCache cache(file_);
  EXPECT_FALSE(cache.best(key()));
  const Measurement failed{
      "B=2", Status::kCompileFailed, std::nullopt, std::nullopt, std::nullopt, "error: too many resources", 0, "GPU-1",
      ""};
  cache.store(key(), {ok("B=1", 1000), failed, ok("B=3", 900)}, Best{"B=3", 900, 0});
  ASSERT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.best(key())->config, "B=3");
  const auto ms = cache.measurements(key());
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].config, "B=3");  // fastest ok first, failures last
  EXPECT_EQ(ms[2].status, Status::kCompileFailed);
  EXPECT_EQ(ms[2].error, "error: too many resources");
  EXPECT_FALSE(ms[2].p50_ns);
  EXPECT_EQ(*cache.measurement(key(), "B=1")->p20_ns, 990);
  EXPECT_FALSE(cache.best(key("other")));

  // Evicting a config that is not the best keeps the best; evicting the best removes it.
  EXPECT_EQ(cache.erase(key(), "B=1"), 1);
  EXPECT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.erase(key(), "B=3"), 2);
  EXPECT_FALSE(cache.best(key()));
  EXPECT_FALSE(cache.measurement(key(), "B=3"));
  EXPECT_EQ(cache.erase(key(), "B=3"), 0);
  // The deletion is in the file, not only in this connection.
  ConfigCache again(file_);
  EXPECT_FALSE(again.best(key()));
  EXPECT_EQ(again.measurements(key()).size(), 1u);
  EXPECT_EQ(again.erase(key()), 1);
  EXPECT_TRUE(again.measured_keys().empty());
}

// A file that is not an SQLite database may be anybody's: refused, byte for byte as it was.
TEST_F(ConfigCacheTest, AFileThatIsNotSqliteIsRefusedAndLeftAsItIs) {
  std::ofstream(file_) << std::string(10000, 'x');
  const std::string before = bytes(file_);
  for (const auto on_damage : {ConfigCache::OnDamage::kMoveAside, ConfigCache::OnDamage::kThrow}) {
    try {
      ConfigCache cache(file_, on_damage);
      FAIL() << "a file of x's was opened as a cache";
    } catch (const tunebench::cache::SqliteError& e) {
      EXPECT_EQ(e.code(), SQLITE_NOTADB);
      EXPECT_NE(std::string(e.what()).find("is not an SQLite database: left as it is"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(bytes(file_), before);
  EXPECT_EQ(count_aside(dir_), 0u);
  EXPECT_EQ(files_in(dir_), 1u);  // no -wal, -shm or -journal beside it
}

namespace {

// A cache of ours (its header intact) with `bytes` of a b-tree page overwritten: the whole page,
// header included, by default, else its cell pointers.
void make_damaged_cache(const fs::path& file, int bytes = 4096) {
  {
    ConfigCache cache(file);
    std::vector<Measurement> ms;
    for (int i = 0; i < 300; ++i) {
      ms.push_back({"B=" + std::to_string(i) + std::string(100, 'p'), Status::kOk, i, i, i, "", 0, "GPU-1", ""});
    }
    cache.store({"mxfp4_gemm", "k1", "M=8,N=4096,K=4096", "NVIDIA H200", "9.0", "cuda 13.0", "kernel"}, ms,
                Best{"B=1", 1, 0});
    cache.database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(4096 * 2 + (bytes < 4096 ? 8 : 0));  // else the cell pointers after the header
  f << std::string(static_cast<std::size_t>(bytes), '\x5a');
}

}  // namespace

TEST_F(ConfigCacheTest, DamagedPagesAreDetected) {
  make_damaged_cache(file_);
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  const std::string warning = testing::internal::GetCapturedStderr();
  // One line that names the file, says it is damaged and where it went, in words, not SQL.
  EXPECT_NE(warning.find("WARNING: config cache " + file_.string() + " is damaged (SQLite"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("; moved to " + file_.string() + ".corrupt-"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("PRAGMA"), std::string::npos) << warning;
  EXPECT_EQ(warning.find('\n'), warning.size() - 1) << warning;
  EXPECT_TRUE(cache.moved_aside());
  EXPECT_EQ(count_aside(dir_), 1u);
  EXPECT_FALSE(cache.best(key()));
  EXPECT_EQ(cache.database().integrity_check(), "ok");
}

// A cache of ours that lost a table after it was made: moved aside, as a damaged
// page is, rather than failing on its first read with SQLite's "no such table".
TEST_F(ConfigCacheTest, ALostTableIsDamageNotAnSqlError) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  }
  make_sqlite(file_, "DROP TABLE best");
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find(file_.string() + " is damaged (its table best is missing); moved to"), std::string::npos)
      << warning;
  EXPECT_TRUE(cache.moved_aside());
  EXPECT_EQ(count_aside(dir_), 1u);
  EXPECT_FALSE(cache.best(key()));
  cache.store(key(), {ok("B=2", 900)}, Best{"B=2", 900, 0});
  EXPECT_EQ(cache.best(key())->config, "B=2");
}

// A lost leases table holds no results: it is made anew and the results kept, for a write and
// for a read-only open alike.
TEST_F(ConfigCacheTest, ALostLeasesTableIsMadeAnewAndTheResultsKept) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  }
  make_sqlite(file_, "DROP TABLE leases");
  {
    testing::internal::CaptureStderr();
    ConfigCache reader(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(reader.best(key())->config, "B=1");
  }
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(cache.moved_aside());
  EXPECT_EQ(count_aside(dir_), 0u);
  EXPECT_EQ(cache.best(key())->config, "B=1");
  EXPECT_EQ(cache.claim(key()).outcome, LeaseClaim::Outcome::kAcquired);
  EXPECT_TRUE(cache.lease_holder(key()));
}

// Damage inside a page that SQLite still opens: the warning quotes the integrity check's first
// finding, not its "*** in database main ***" heading.
TEST_F(ConfigCacheTest, TheIntegrityChecksFirstFindingIsQuoted) {
  make_damaged_cache(file_, 50);
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find(" is damaged (SQLite's integrity check: On tree page "), std::string::npos) << warning;
  EXPECT_EQ(warning.find("in database main"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("missing from index"), std::string::npos) << warning;  // its second finding
  EXPECT_EQ(warning.find("***"), std::string::npos) << warning;
  EXPECT_TRUE(cache.moved_aside());
}

// Another application's SQLite file: refused before anything is written (no WAL switch, no
// rename, no fresh cache in its place), with or without an application_id of its own.
TEST_F(ConfigCacheTest, ForeignDatabaseIsRefusedAndLeftByteForByte) {
  for (const char* app : {"", "PRAGMA application_id = 1234;"}) {
    fs::remove(file_);
    make_sqlite(file_, std::string("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (42);") + app);
    const std::string before = bytes(file_);
    for (const auto on_damage : {ConfigCache::OnDamage::kMoveAside, ConfigCache::OnDamage::kThrow}) {
      try {
        ConfigCache cache(file_, on_damage);
        FAIL() << "another application's database was opened as a cache";
      } catch (const tunebench::cache::SqliteError& e) {
        EXPECT_EQ(e.code(), SQLITE_NOTADB);
        EXPECT_NE(std::string(e.what()).find("is not a tunebench config cache"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(bytes(file_), before) << app;
    EXPECT_EQ(count_aside(dir_), 0u);
    EXPECT_EQ(files_in(dir_), 1u);
  }
}

// A cache whose tables are this library's but with no application_id (stamped by no version so
// far, or cleared) is ours: opened, read, and stamped once written; a reader leaves it unstamped.
TEST_F(ConfigCacheTest, ACacheWithoutApplicationIdIsKnownByItsTablesAndStamped) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  }
  make_sqlite(file_, "PRAGMA application_id = 0;");
  {
    ConfigCache reader(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead);
    EXPECT_EQ(reader.best(key())->config, "B=1");
    EXPECT_EQ(reader.database().application_id(), 0);
  }
  ConfigCache cache(file_);
  EXPECT_FALSE(cache.moved_aside());
  EXPECT_EQ(cache.best(key())->config, "B=1");
  EXPECT_EQ(cache.database().application_id(), ConfigCache::kApplicationId);
}

// An empty file is SQLite's empty database: bench makes its cache there and says so in one
// line (where the file is older than a sibling's new cache would be); a reader finds no cache in
// it and changes nothing.
TEST_F(ConfigCacheTest, AnEmptyFileBecomesACacheWithANoteAndIsNotReadAsOne) {
  std::ofstream(file_).flush();
  {
    // Made seconds ago, as a sibling process starting the same new cache makes it: no note.
    const fs::path fresh = dir_ / "fresh.sqlite";
    std::ofstream(fresh).flush();
    testing::internal::CaptureStderr();
    ConfigCache sibling(fresh);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
  fs::last_write_time(file_, fs::file_time_type::clock::now() - std::chrono::minutes(1));
  EXPECT_THROW(ConfigCache(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead),
               tunebench::cache::SqliteError);
  EXPECT_EQ(fs::file_size(file_), 0u);
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("is an empty file: starting a new cache in it\n"), std::string::npos) << err;
  EXPECT_FALSE(cache.moved_aside());
  cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  EXPECT_EQ(cache.database().application_id(), ConfigCache::kApplicationId);
}

TEST_F(ConfigCacheTest, SchemaOneIsMigratedKeepingRows) {
  {
    tunebench::cache::Database v1(file_);
    v1.exec(
        "CREATE TABLE best (op TEXT NOT NULL, kernel_version TEXT NOT NULL, tuning_key TEXT NOT NULL, "
        "device_name TEXT NOT NULL, device_cc TEXT NOT NULL, toolkit TEXT NOT NULL, timing_mode TEXT NOT NULL, "
        "config TEXT NOT NULL, p50_ns INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (op, "
        "kernel_version, tuning_key, device_name, device_cc, toolkit, timing_mode));"
        "INSERT INTO best VALUES ('mxfp4_gemm', 'k1', 'M=8,N=4096,K=4096', 'NVIDIA H200', '9.0', 'cuda 13.0', "
        "'kernel', 'B=7', 777, 1);"
        "PRAGMA application_id = 1413631555; PRAGMA user_version = 1;");
  }
  ConfigCache cache(file_);
  EXPECT_FALSE(cache.moved_aside());
  EXPECT_EQ(cache.database().user_version(), ConfigCache::kSchemaVersion);
  ASSERT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.best(key())->p50_ns, 777);
  cache.store(key(), {ok("B=7", 700)}, std::nullopt);
  EXPECT_EQ(cache.measurements(key()).size(), 1u);
}

// Schema 2 (no host column): its measurements stay readable, with an empty host, and new ones
// get the host they were stored on, or the one they name.
TEST_F(ConfigCacheTest, SchemaTwoIsMigratedWithHosts) {
  {
    ConfigCache v3(file_);
    v3.store(key(), {ok("B=1", 500)}, std::nullopt);
  }
  {
    tunebench::cache::Database v2(file_);
    v2.exec("ALTER TABLE measurements DROP COLUMN host; PRAGMA user_version = 2;");
  }
  ConfigCache cache(file_);
  EXPECT_FALSE(cache.moved_aside());
  EXPECT_EQ(cache.database().user_version(), ConfigCache::kSchemaVersion);
  ASSERT_EQ(cache.measurements(key()).size(), 1u);
  EXPECT_EQ(cache.measurements(key())[0].host, "");
  auto remote = ok("B=2", 400);
  remote.host = "node-17";
  cache.store(key(), {remote, ok("B=3", 450)}, std::nullopt);
  EXPECT_EQ(cache.measurement(key(), "B=2")->host, "node-17");
  char here[256] = {};
  ASSERT_EQ(gethostname(here, sizeof here - 1), 0);
  EXPECT_EQ(cache.measurement(key(), "B=3")->host, here);
}

TEST_F(ConfigCacheTest, NewerSchemaIsRefusedAndNotTouched) {
  make_sqlite(file_, "PRAGMA application_id = 1413631555; PRAGMA user_version = 99; CREATE TABLE t (x);");
  const std::string before = bytes(file_);
  try {
    ConfigCache cache(file_);
    FAIL() << "a cache of schema 99 was opened";
  } catch (const tunebench::cache::SqliteError& e) {
    EXPECT_NE(std::string(e.what()).find("was written by a newer tunebench (schema 99, this one reads up to " +
                                         std::to_string(ConfigCache::kSchemaVersion) + "): left as it is"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(bytes(file_), before);
  EXPECT_EQ(count_aside(dir_), 0u);
}

// Opened to read (tunebench-cache list, show, export), a cache is never written: not even the
// journal mode of a copy in rollback mode, nor a migration of an older schema, which is shown
// as it will read once migrated.
TEST_F(ConfigCacheTest, ReadAccessWritesNothingAndReadsOlderSchemas) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 500)}, Best{"B=1", 500, 0});
  }
  make_sqlite(file_,
              "ALTER TABLE measurements DROP COLUMN host; PRAGMA user_version = 2; PRAGMA journal_mode = DELETE;");
  const std::string before = bytes(file_);
  {
    ConfigCache cache(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead);
    ASSERT_EQ(cache.measurements(key()).size(), 1u);
    EXPECT_EQ(cache.measurements(key())[0].host, "");
    EXPECT_EQ(cache.best(key())->config, "B=1");
    EXPECT_THROW(cache.store(key(), {ok("B=2", 400)}, std::nullopt), tunebench::cache::SqliteError);
  }
  EXPECT_EQ(bytes(file_), before);
  make_sqlite(file_, "DROP TABLE measurements; PRAGMA user_version = 1;");
  const std::string v1 = bytes(file_);
  {
    ConfigCache cache(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead);
    EXPECT_TRUE(cache.measurements(key()).empty());
    EXPECT_EQ(cache.best(key())->config, "B=1");
  }
  EXPECT_EQ(bytes(file_), v1);
}

// Several processes write one file at once: no "database is locked", no lost rows.
TEST_F(ConfigCacheTest, ConcurrentWritersLoseNothing) {
  { ConfigCache create(file_); }
  constexpr int kProcs = 4, kKeys = 40;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        ConfigCache cache(file_);
        for (int i = 0; i < kKeys; ++i) {
          const Key k = key("p" + std::to_string(p) + "k" + std::to_string(i));
          cache.store(k, {ok("B=1", i + 1), ok("B=2", i + 2)}, Best{"B=1", i + 1, 0});
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", p, e.what());
        code = 1;
      }
      std::_Exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  }
  ConfigCache cache(file_);
  EXPECT_EQ(cache.list().size(), static_cast<std::size_t>(kProcs * kKeys));
  EXPECT_EQ(cache.measured_keys().size(), static_cast<std::size_t>(kProcs * kKeys));
  EXPECT_EQ(cache.database().integrity_check(), "ok");
}

TEST_F(ConfigCacheTest, CliListsShowsEvictsExportsAndImports) {
  const std::string c1 = config_of("mxfp4_gemm", 0), c2 = config_of("mxfp4_gemm", 1);
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok(c1, 2000), ok(c2, 1500)}, Best{c2, 1500, 0});
    cache.store(key("M=1,N=4096,K=4096"), {ok(c1, 900)}, Best{c1, 900, 0});
  }
  std::string out;
  EXPECT_EQ(cli("list", &out), 0);
  EXPECT_NE(out.find("M=8,N=4096,K=4096  " + c2 + "  p50 1.50 us"), std::string::npos) << out;
  EXPECT_EQ(cli("show mxfp4_gemm M=8,N=4096,K=4096", &out), 0);
  EXPECT_NE(out.find("best: " + c2), std::string::npos) << out;
  EXPECT_EQ(cli("export '" + (dir_ / "export.json").string() + "'"), 0);
  EXPECT_EQ(cli("evict mxfp4_gemm M=8,N=4096,K=4096 " + c2, &out), 0);
  EXPECT_NE(out.find("evicted 2 rows"), std::string::npos) << out;
  // Nothing matched: the line says which part of the input matched nothing.
  EXPECT_EQ(cli("evict mxfp4_gemm M=8,N=4096,K=4096 " + c2, &out), 1);
  EXPECT_NE(
      out.find("evict: nothing evicted: key 'M=8,N=4096,K=4096' of op 'mxfp4_gemm' has no row of config '" + c2 + "'"),
      std::string::npos)
      << out;
  EXPECT_EQ(cli("evict mxfp4_gemm M=9,N=4096,K=4096", &out), 1);
  EXPECT_NE(out.find("op 'mxfp4_gemm' has no key 'M=9,N=4096,K=4096' (it has 2 keys;"), std::string::npos) << out;
  EXPECT_EQ(cli("show nope nope", &out), 1);
  EXPECT_NE(out.find("show: nothing to show: the cache holds no key of op 'nope' (its ops: mxfp4_gemm)"),
            std::string::npos)
      << out;
  EXPECT_EQ(cli("frobnicate", &out), 2);
  EXPECT_NE(out.find("'frobnicate': unknown command"), std::string::npos) << out;
  EXPECT_EQ(cli("show mxfp4_gemm", &out), 2);
  EXPECT_NE(out.find("show: wrong number of arguments (1)"), std::string::npos) << out;
  EXPECT_EQ(cli("export ''", &out), 2);  // an empty FILE is no file, not stdout
  EXPECT_NE(out.find("export: an empty FILE name (expected a file path, or none for stdout)"), std::string::npos)
      << out;
  EXPECT_EQ(cli("import ''", &out), 2);
  EXPECT_NE(out.find("import: an empty FILE name (expected a file path)"), std::string::npos) << out;
  EXPECT_EQ(cli("list --cache=other.sqlite", &out), 2);
  EXPECT_NE(out.find("list: '--cache=other.sqlite' is an option and comes before the command"), std::string::npos)
      << out;
  {
    ConfigCache cache(file_);
    EXPECT_FALSE(cache.best(key()));
  }
  EXPECT_EQ(cli("import '" + (dir_ / "export.json").string() + "'", &out), 0) << out;
  {
    ConfigCache cache(file_);
    ASSERT_TRUE(cache.best(key()));
    EXPECT_EQ(cache.best(key())->config, c2);
    EXPECT_EQ(cache.measurements(key()).size(), 2u);
  }
  // An export written before streaming (the whole document, dump(2), members in name order)
  // still imports.
  {
    std::ifstream f(dir_ / "export.json");
    std::ofstream(dir_ / "pretty.json") << nlohmann::json::parse(f).dump(2) << "\n";
  }
  EXPECT_EQ(cli("import '" + (dir_ / "pretty.json").string() + "'", &out), 0) << out;
  // The same rows the cache holds: read and checked whole, and said to change nothing.
  EXPECT_NE(out.find("nothing imported: the cache already holds 2 keys of the file as new or newer"), std::string::npos)
      << out;
  std::ofstream(dir_ / "bad.json") << "{\"tunebench_cache_schema\": 1, \"entries\": [{\"key\": 3}]}";
  EXPECT_EQ(cli("import '" + (dir_ / "bad.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("entries[0]: expected an object holding \"op\", got 3"), std::string::npos) << out;
  std::string text = bytes(dir_ / "export.json");
  const auto at = text.find("\"p50_ns\":1500");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 13, "\"p50_ns\":-1500");
  std::ofstream(dir_ / "negative.json") << text;
  EXPECT_EQ(cli("import '" + (dir_ / "negative.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("negative"), std::string::npos) << out;
  // Wrong types and empty key fields are named, without the JSON library's wording.
  std::ofstream(dir_ / "types.json") << R"({"tunebench_cache_schema": 1, "entries": [{"key": {"op": 3}}]})";
  EXPECT_EQ(cli("import '" + (dir_ / "types.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("entries[0]: \"op\": expected a string, got 3"), std::string::npos) << out;
  std::ofstream(dir_ / "empty_op.json")
      << R"({"tunebench_cache_schema": 1, "entries": [{"key": {"op": "", "kernel_version": "v", "tuning_key": "M=1", "device_name": "d",
            "device_cc": "9.0", "toolkit": "t", "timing_mode": "kernel"}, "measurements": [], "best": null}]})";
  EXPECT_EQ(cli("import '" + (dir_ / "empty_op.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("\"op\": expected a non-empty string"), std::string::npos) << out;
  // Merging keeps what the cache learnt later: an export whose best is older changes no best.
  {
    std::string old = bytes(dir_ / "export.json");
    for (std::size_t u = 0; (u = old.find("\"updated_at\":", u)) != std::string::npos;) {
      const auto end = old.find_first_of(",\n}", u + 13);
      old.replace(u + 13, end - (u + 13), "1");
      u += 14;
    }
    const auto cfg = old.find("\"config\":\"" + c2 + "\"");  // the first is key()'s best
    ASSERT_NE(cfg, std::string::npos);
    old.replace(cfg, 11 + c2.size(), "\"config\":\"" + c1 + "\"");
    std::ofstream(dir_ / "old.json") << old;
  }
  EXPECT_EQ(cli("import '" + (dir_ / "old.json").string() + "'", &out), 0) << out;
  EXPECT_NE(out.find("nothing imported: the cache already holds 2 keys of the file as new or newer (3 measurements, 2 "
                     "best configs)"),
            std::string::npos)
      << out;
  {
    ConfigCache merged(file_);
    EXPECT_EQ(merged.best(key())->config, c2);
  }
  EXPECT_EQ(cli("evict mxfp4_gemm M=8,N=4096,K=4096 " + c1, &out), 0);  // a measurement, not the best
  EXPECT_NE(out.find("evicted 1 row\n"), std::string::npos) << out;
  std::ofstream(dir_ / "noschema.json") << R"({"entries": []})";
  EXPECT_EQ(cli("import '" + (dir_ / "noschema.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("\"tunebench_cache_schema\": missing, expected an integer from 1 to "), std::string::npos) << out;
  std::ofstream(dir_ / "newer.json") << R"({"tunebench_cache_schema": 99, "entries": []})";
  EXPECT_EQ(cli("import '" + (dir_ / "newer.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("\"tunebench_cache_schema\": got 99, expected an integer from 1 to "), std::string::npos) << out;
  EXPECT_NE(out.find("(a newer tunebench wrote this file: import it with that one)"), std::string::npos) << out;
  EXPECT_EQ(cli("export '" + file_.string() + "'", &out), 2);  // would overwrite the cache
  const std::string missing = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + (dir_ / "none.sqlite").string() +
                              "' list >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(missing.c_str())), 2);
  EXPECT_FALSE(fs::exists(dir_ / "none.sqlite"));  // a read-only command creates nothing
  std::ofstream(dir_ / "empty.sqlite").flush();
  const std::string empty = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + (dir_ / "empty.sqlite").string() +
                            "' list >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(empty.c_str())), 2);
  EXPECT_EQ(fs::file_size(dir_ / "empty.sqlite"), 0u);  // nor turns an empty file into a cache
}

// list, show and export read: a cache in rollback mode (as another tool may leave a copy)
// stays byte for byte as it was; before, list switched it to WAL.
TEST_F(ConfigCacheTest, CliInspectionWritesNothing) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok(config_of("mxfp4_gemm", 0), 1500)}, Best{config_of("mxfp4_gemm", 0), 1500, 0});
  }
  make_sqlite(file_, "PRAGMA journal_mode = DELETE;");
  const std::string before = bytes(file_);
  std::string out;
  EXPECT_EQ(cli("list", &out), 0) << out;
  EXPECT_EQ(cli("show mxfp4_gemm M=8,N=4096,K=4096", &out), 0) << out;
  EXPECT_EQ(cli("export '" + (dir_ / "e.json").string() + "'", &out), 0) << out;
  EXPECT_EQ(bytes(file_), before);
  // Another application's file: one line, exit 2, left as it was.
  make_sqlite(dir_ / "other.sqlite", "CREATE TABLE mine (x); PRAGMA journal_mode = DELETE;");
  const std::string other = bytes(dir_ / "other.sqlite");
  for (const std::string& cmd : {std::string("list"), "import '" + (dir_ / "e.json").string() + "'"}) {
    const std::string line = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + (dir_ / "other.sqlite").string() +
                             "' " + cmd + " > '" + (dir_ / "o.txt").string() + "' 2>&1";
    EXPECT_EQ(WEXITSTATUS(std::system(line.c_str())), 2) << cmd;
    const std::string said = bytes(dir_ / "o.txt");
    EXPECT_NE(said.find("is not a tunebench config cache"), std::string::npos) << said;
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
    EXPECT_EQ(bytes(dir_ / "other.sqlite"), other) << cmd;
  }
}

// A key with one candidate is not timed (its p50 is stored as 0): the list says so instead of
// "p50 0.00 us". A host key has no compute capability: no empty field in its brackets.
TEST_F(ConfigCacheTest, CliListSaysUntimedAndLeavesOutAnEmptyComputeCapability) {
  {
    ConfigCache cache(file_);
    const Key host{"cpu_mxfp4_gemm", "cpu_mxfp4_gemm-1", "M=1,N=256,K=512", "AMD EPYC", "", "host", "host"};
    cache.store(host, {}, Best{"BLOCK_N=64,BLOCK_K=512", 0, 0});
    cache.store(key(), {ok("B=2", 1500)}, Best{"B=2", 1500, 0});
  }
  const std::string out_file = (dir_ / "out.txt").string();
  const std::string cmd =
      std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + file_.string() + "' list > '" + out_file + "' 2>&1";
  ASSERT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
  std::ifstream f(out_file);
  const std::string out(std::istreambuf_iterator<char>(f), {});
  EXPECT_NE(out.find("cpu_mxfp4_gemm  M=1,N=256,K=512  BLOCK_N=64,BLOCK_K=512  not timed (one candidate)  "
                     "[AMD EPYC, host, host]\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("p50 0.00"), std::string::npos) << out;
  EXPECT_NE(out.find("M=8,N=4096,K=4096  B=2  p50 1.50 us  [NVIDIA H200 9.0, cuda 13.0, kernel]\n"), std::string::npos)
      << out;
}

TEST_F(ConfigCacheTest, AFolderIsRefusedNotMovedAside) {
  fs::create_directories(dir_ / "folder" / "kernels");
  EXPECT_THROW(ConfigCache(dir_ / "folder"), tunebench::cache::SqliteError);
  EXPECT_TRUE(fs::is_directory(dir_ / "folder" / "kernels"));
  EXPECT_EQ(count_aside(dir_), 0u);
}

// A device such as /dev/null is refused before SQLite opens it, so nothing (no -journal, no
// -wal) is made beside it.
TEST_F(ConfigCacheTest, ADeviceIsRefusedAndNothingIsMadeBesideIt) {
  std::vector<bool> before;
  for (const char* suffix : {"-journal", "-wal", "-shm"})
    before.push_back(fs::exists(std::string("/dev/null") + suffix));
  try {
    ConfigCache cache("/dev/null");
    FAIL() << "/dev/null was opened as a cache";
  } catch (const tunebench::cache::SqliteError& e) {
    EXPECT_NE(std::string(e.what()).find("config cache /dev/null: is not a regular file"), std::string::npos)
        << e.what();
  }
  int i = 0;
  for (const char* suffix : {"-journal", "-wal", "-shm"}) {
    EXPECT_EQ(fs::exists(std::string("/dev/null") + suffix), before[i++]) << suffix;
  }
}

TEST_F(ConfigCacheTest, TwoCorruptFilesInOneSecondAreBothKept) {
  for (int i = 0; i < 2; ++i) {
    make_damaged_cache(file_);
    testing::internal::CaptureStderr();
    ConfigCache cache(file_);
    testing::internal::GetCapturedStderr();
  }
  EXPECT_EQ(count_aside(dir_), 2u);
}

TEST_F(ConfigCacheTest, CliInspectionLeavesADamagedFileAlone) {
  { std::ofstream(file_) << "not a database, but somebody's data"; }
  const std::string cmd = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + file_.string() + "' list > '" +
                          (dir_ / "out.txt").string() + "' 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  std::ifstream out(dir_ / "out.txt");
  const std::string text(std::istreambuf_iterator<char>(out), {});
  EXPECT_NE(text.find("is not an SQLite database: left as it is"), std::string::npos) << text;
  std::ifstream kept(file_);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "not a database, but somebody's data");
  int others = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    others += e.path().filename().string().find(".corrupt-") != std::string::npos;
  EXPECT_EQ(others, 0);
}

TEST_F(ConfigCacheTest, OnDamageThrowLeavesTheFileAndThrows) {
  { std::ofstream(file_) << "garbage"; }
  EXPECT_THROW(ConfigCache(file_, ConfigCache::OnDamage::kThrow), tunebench::cache::SqliteError);
  std::ifstream kept(file_);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "garbage");
}

// A file this process may not write opens read-only: reads work, read_only() says so, and a
// store fails with SQLite's message once, not "X (X)".
TEST_F(ConfigCacheTest, AReadOnlyFileIsReadAndSaysSo) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
    EXPECT_FALSE(cache.read_only());
  }
  fs::permissions(dir_, fs::perms::all);  // -shm and -wal can be made beside it
  fs::permissions(file_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const int rc = as_unprivileged([&]() -> std::string {
    ConfigCache cache(file_);
    if (!cache.read_only()) return "read_only() is false";
    if (!cache.best(key()) || cache.best(key())->config != "B=1") return "the stored best was not read";
    try {
      cache.store(key("M=1,N=1,K=32"), {ok("B=2", 5)}, std::nullopt);
      return "a store into a read-only file succeeded";
    } catch (const tunebench::cache::SqliteError& e) {
      const std::string what = e.what();
      if (what.find("readonly database (attempt") != std::string::npos) return "message repeated: " + what;
    }
    return "";
  });
  if (rc == 77) GTEST_SKIP() << "running as root and cannot drop to nobody";
  EXPECT_EQ(rc, 0);
}

// A read-only file in a read-only folder (a shared cache, say): the WAL's -shm cannot be made
// beside it, yet every key it holds is answered, and read_only() says it takes no stores.
TEST_F(ConfigCacheTest, AReadOnlyFileInAReadOnlyFolderIsRead) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  }
  const auto read_only = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  fs::permissions(file_, read_only);
  fs::permissions(dir_, read_only | fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec);
  const int rc = as_unprivileged([&]() -> std::string {
    ConfigCache cache(file_);
    if (!cache.read_only()) return "read_only() is false";
    if (!cache.best(key()) || cache.best(key())->config != "B=1") return "the stored best was not read";
    if (cache.measurements(key()).size() != 1) return "the measurement was not read";
    if (cache.list().size() != 1) return "list() does not hold the key";
    return "";
  });
  fs::permissions(dir_, fs::perms::owner_all);
  if (rc == 77) GTEST_SKIP() << "running as root and cannot drop to nobody";
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(fs::exists(dir_ / "configs.sqlite-shm"));
}

TEST_F(ConfigCacheTest, KeysOrderFieldByFieldSoSetsHoldEachKeyOnce) {
  Key other_mode = key();
  other_mode.timing_mode = "cudagraph";
  const std::set<Key> keys{key(), key(), key("M=16,N=4096,K=4096"), other_mode};
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_TRUE(key() < key("M=16,N=4096,K=4096") || key("M=16,N=4096,K=4096") < key());
  EXPECT_FALSE(key() < key());
}

namespace {

// A second connection holding the write lock (BEGIN IMMEDIATE), as a long import in another
// process does; released by release() or at the end of the scope.
class WriteLockHolder {
 public:
  explicit WriteLockHolder(const fs::path& file) {
    sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr);
    locked_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~WriteLockHolder() {
    release();
    sqlite3_close(db_);
  }
  bool locked() const { return locked_; }
  void release() {
    if (locked_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    locked_ = false;
  }

 private:
  sqlite3* db_ = nullptr;
  bool locked_ = false;
};

}  // namespace

// A lock held longer than the busy timeout does not lose the store: it is retried until the
// lock goes (here after 300 ms, 15 busy timeouts).
TEST_F(ConfigCacheTest, AStoreWaitsOutALockHeldPastTheBusyTimeout) {
  const tunebench::cache::BusyPolicy busy{std::chrono::milliseconds(20), std::chrono::milliseconds(5000)};
  ConfigCache cache(file_, ConfigCache::OnDamage::kMoveAside, busy);
  WriteLockHolder holder(file_);
  ASSERT_TRUE(holder.locked());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    holder.release();
  });
  EXPECT_NO_THROW(cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0}));
  release.join();
  ASSERT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.best(key())->config, "B=1");
}

// A lock held past the retry budget ends the store with a busy error saying so, within the
// budget, and nothing is stored.
TEST_F(ConfigCacheTest, AStoreGivesUpOnALockHeldPastTheBudgetWithABusyError) {
  const tunebench::cache::BusyPolicy busy{std::chrono::milliseconds(20), std::chrono::milliseconds(200)};
  ConfigCache cache(file_, ConfigCache::OnDamage::kMoveAside, busy);
  WriteLockHolder holder(file_);
  ASSERT_TRUE(holder.locked());
  const auto start = std::chrono::steady_clock::now();
  try {
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
    ADD_FAILURE() << "a store under another connection's write lock succeeded";
  } catch (const tunebench::cache::SqliteError& e) {
    EXPECT_TRUE(tunebench::cache::is_busy(e.code())) << e.what();
    EXPECT_NE(std::string(e.what()).find("locked by another process"), std::string::npos) << e.what();
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(100));
  EXPECT_LT(waited, std::chrono::milliseconds(2000));
  holder.release();
  EXPECT_FALSE(cache.best(key()));
}

// A cache path is a path: a relative name starting with "file:" is a file of that name in the
// current folder, and "?mode=memory" is part of the name, not an SQLite URI parameter.
TEST_F(ConfigCacheTest, ANameThatLooksLikeAUriIsAFileOfThatName) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_);
  for (const std::string name : {"file:rel.sqlite", "file:mem.sqlite?mode=memory"}) {
    {
      ConfigCache cache(name);
      cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
    }
    EXPECT_TRUE(fs::exists(dir_ / name)) << name;
    ConfigCache again(dir_ / name);
    ASSERT_TRUE(again.best(key())) << name << " holds no rows";
    EXPECT_EQ(again.best(key())->config, "B=1");
  }
  fs::current_path(before);
}

// A new cache in a folder this user cannot write: the error says the folder is not writable.
TEST_F(ConfigCacheTest, ANewCacheInAReadOnlyFolderSaysTheFolderIsNotWritable) {
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  const int rc = as_unprivileged([&]() -> std::string {
    try {
      ConfigCache cache(dir_ / "new.sqlite");
      return "a cache was created in a read-only folder";
    } catch (const tunebench::cache::SqliteError& e) {
      const std::string what = e.what();
      if (what.find("folder " + dir_.string() + " is not writable") == std::string::npos) return "message: " + what;
    }
    return "";
  });
  fs::permissions(dir_, fs::perms::owner_all);
  if (rc == 77) GTEST_SKIP() << "running as root and cannot drop to nobody";
  EXPECT_EQ(rc, 0);
}

// Another user's read-only cache in a folder this user can write: read without creating a
// -shm or -wal file beside it.
TEST_F(ConfigCacheTest, AReadOnlyFileInAWritableFolderGetsNothingBesideIt) {
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 1000)}, Best{"B=1", 1000, 0});
  }
  ASSERT_FALSE(fs::exists(dir_ / "configs.sqlite-wal"));
  fs::permissions(dir_, fs::perms::all);
  fs::permissions(file_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const int rc = as_unprivileged([&]() -> std::string {
    ConfigCache cache(file_);
    if (!cache.read_only()) return "read_only() is false";
    if (!cache.best(key()) || cache.best(key())->config != "B=1") return "the stored best was not read";
    if (fs::exists(dir_ / "configs.sqlite-shm")) return "a -shm file was created";
    if (fs::exists(dir_ / "configs.sqlite-wal")) return "a -wal file was created";
    return "";
  });
  fs::permissions(dir_, fs::perms::owner_all);
  if (rc == 77) GTEST_SKIP() << "running as root and cannot drop to nobody";
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(fs::exists(dir_ / "configs.sqlite-shm"));
  EXPECT_FALSE(fs::exists(dir_ / "configs.sqlite-wal"));
}

// A row JSON cannot hold (bytes that are not UTF-8) stops the export with one line naming it,
// and an earlier export at that path is kept whole: the file is written beside it and renamed.
TEST_F(ConfigCacheTest, CliExportFailureKeepsTheEarlierFile) {
  const std::string c = config_of("mxfp4_gemm", 0);
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok(c, 1500)}, Best{c, 1500, 0});
  }
  const fs::path target = dir_ / "export.json";
  std::string out;
  ASSERT_EQ(cli("export '" + target.string() + "'", &out), 0) << out;
  const std::string earlier = bytes(target);
  {
    ConfigCache cache(file_);
    cache.store(key("M=1,N=4096,K=4096"), {ok("BAD=\xff\xfe", 900)}, std::nullopt);
  }
  EXPECT_EQ(cli("export '" + target.string() + "'", &out), 2);
  EXPECT_NE(out.find("tunebench-cache: export " + target.string() +
                     ": entries[0] (op 'mxfp4_gemm', tuning key 'M=1,N=4096,K=4096') config 'BAD=\\xff\\xfe': "
                     "\"config\" 'BAD=\\xff\\xfe' is not UTF-8"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("the file there is left as it was\n"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find("json.exception"), std::string::npos) << out;
  EXPECT_EQ(bytes(target), earlier);
  for (const auto& f : fs::directory_iterator(dir_)) {
    EXPECT_EQ(f.path().filename().string().find(".tmp."), std::string::npos) << "left behind: " << f.path();
  }
}

// Imports are checked against the build's ops: an unknown op (unless --keep-unknown-ops), a key
// no shape makes, a config of no space, a made-up time and a timestamp in the future are each
// refused in one line naming the entry, and nothing of the file is stored.
TEST_F(ConfigCacheTest, CliImportIsCheckedAgainstTheOps) {
  const std::string c = config_of("mxfp4_gemm", 0);
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto doc = [&](const std::string& op, const std::string& tuning_key, const std::string& config,
                       std::int64_t p50, std::int64_t updated_at) {
    nlohmann::json k = {
        {"op", op},           {"kernel_version", "k1"}, {"tuning_key", tuning_key}, {"device_name", "NVIDIA H200"},
        {"device_cc", "9.0"}, {"toolkit", "cuda 13.0"}, {"timing_mode", "kernel"}};
    nlohmann::json m = {{"config", config},        {"status", "ok"},         {"p20_ns", p50},
                        {"p50_ns", p50},           {"p80_ns", p50},          {"error", ""},
                        {"measured_at", now - 10}, {"device_uuid", "GPU-1"}, {"host", "h"}};
    nlohmann::json e = {{"key", k},
                        {"best", {{"config", config}, {"p50_ns", p50}, {"updated_at", updated_at}}},
                        {"measurements", nlohmann::json::array({m})}};
    nlohmann::json d = {{"tunebench_cache_schema", 3}, {"entries", nlohmann::json::array({e})}};
    static int n = 0;
    const fs::path f = dir_ / ("in" + std::to_string(n++) + ".json");
    std::ofstream(f) << d.dump();
    return "'" + f.string() + "'";
  };
  { ConfigCache create(file_); }
  std::string out;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {doc("nope_op", "M=8,N=4096,K=4096", c, 1500, now - 5), "entries[0]: op 'nope_op' is not an op of this build ("},
      {doc("mxfp4_gemm", "M=0,N=4096,K=4096", c, 1500, now - 5),
       "entries[0]: tuning key 'M=0,N=4096,K=4096' of op mxfp4_gemm: expected M=<M>,N=<N>,K=<K> with each > 0"},
      {doc("mxfp4_gemm", "M=8,N=4096,K=100", c, 1500, now - 5), "K=100 is not a multiple of 32"},
      {doc("mxfp4_gemm", "banana", c, 1500, now - 5), "tuning key 'banana' of op mxfp4_gemm: expected"},
      {doc("mxfp4_gemm", "M=8,N=4096,K=4096", "BLOCK_Q=7", 1500, now - 5),
       "config 'BLOCK_Q=7' of op mxfp4_gemm: not a config of its default or expanded space"},
      {doc("mxfp4_gemm", "M=8,N=4096,K=4096", c, 1, now - 5),
       "p50_ns 1 ns: expected a measured time of at least 100 ns"},
      {doc("mxfp4_gemm", "M=8,N=4096,K=4096", c, 1500, 4102444800),
       "\"updated_at\": 4102444800 is not a time up to now"},
  };
  {
    // A host op compiles nothing: a compile_failed row of one can only be forged.
    const std::string cpu = config_of("cpu_mxfp4_gemm", 0);
    nlohmann::json k = {{"op", "cpu_mxfp4_gemm"},    {"kernel_version", "k1"}, {"tuning_key", "M=1,N=256,K=512"},
                        {"device_name", "some CPU"}, {"device_cc", ""},        {"toolkit", "host"},
                        {"timing_mode", "host"}};
    nlohmann::json m = {{"config", cpu},           {"status", "compile_failed"}, {"p20_ns", nullptr},
                        {"p50_ns", nullptr},       {"p80_ns", nullptr},          {"error", "forged"},
                        {"measured_at", now - 10}, {"device_uuid", ""},          {"host", "h"}};
    nlohmann::json e = {{"key", k}, {"best", nullptr}, {"measurements", nlohmann::json::array({m})}};
    std::ofstream(dir_ / "host_compile.json")
        << nlohmann::json{{"tunebench_cache_schema", 3}, {"entries", nlohmann::json::array({e})}}.dump();
    EXPECT_EQ(cli("import '" + (dir_ / "host_compile.json").string() + "'", &out), 2) << out;
    EXPECT_NE(out.find("entries[0]: config '" + cpu +
                       "' of op cpu_mxfp4_gemm: status compile_failed, but cpu_mxfp4_gemm is a host op, which "
                       "compiles nothing (a forged row?); nothing imported\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
  {
    // Only an ok row has times (a failed, timed-out or pruned config has none): a pruned row that
    // carries times is made up.
    const std::string quoted = doc("mxfp4_gemm", "M=8,N=4096,K=4096", c, 1500, now - 5);
    const fs::path f = quoted.substr(1, quoted.size() - 2);
    auto d = nlohmann::json::parse(std::ifstream(f));
    d["tunebench_cache_schema"] = 5;
    d["entries"][0]["best"] = nullptr;
    d["entries"][0]["measurements"][0]["status"] = "pruned";
    std::ofstream(f) << d.dump();
    EXPECT_EQ(cli("import " + quoted, &out), 2) << out;
    EXPECT_NE(out.find("entries[0]: config '" + c +
                       "': status pruned with a time; only an ok row has p20_ns, p50_ns or p80_ns; nothing "
                       "imported\n"),
              std::string::npos)
        << out;
    d["entries"][0]["measurements"][0]["status"] = "launch_failed";
    std::ofstream(f) << d.dump();
    EXPECT_EQ(cli("import " + quoted, &out), 2) << out;
    EXPECT_NE(out.find("status launch_failed with a time"), std::string::npos) << out;
    // A config measured twice in one entry: which row holds cannot be told.
    d["entries"][0]["measurements"][0]["status"] = "ok";
    d["entries"][0]["measurements"].push_back(d["entries"][0]["measurements"][0]);
    std::ofstream(f) << d.dump();
    EXPECT_EQ(cli("import " + quoted, &out), 2) << out;
    EXPECT_NE(out.find("entries[0]: config '" + c + "' is listed twice in its entry; nothing imported\n"),
              std::string::npos)
        << out;
  }
  for (const auto& [file, expected] : refused) {
    EXPECT_EQ(cli("import " + file, &out), 2) << expected;
    EXPECT_NE(out.find(expected), std::string::npos) << out;
    EXPECT_NE(out.find("; nothing imported\n"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
  {
    ConfigCache cache(file_);
    EXPECT_TRUE(cache.entries().empty());
  }
  // Another build's op is kept, unchecked, when asked; this build's ops are still checked.
  EXPECT_EQ(cli("import --keep-unknown-ops " + doc("other_op", "anything", "X=1", 1500, now - 5), &out), 0) << out;
  EXPECT_NE(out.find("imported 1 key; 1 key of ops this build lacks, kept unchecked\n"), std::string::npos) << out;
  EXPECT_EQ(
      cli("import --keep-unknown-ops " + doc("mxfp4_gemm", "M=8,N=4096,K=4096", "BLOCK_Q=7", 1500, now - 5), &out), 2);
  EXPECT_EQ(cli("import " + doc("mxfp4_gemm", "M=8,N=4096,K=4096", c, 1500, now - 5), &out), 0) << out;
  ConfigCache cache(file_);
  EXPECT_EQ(cache.best(key())->config, c);
  EXPECT_EQ(cache.entries().size(), 2u);
}

// What list and show print of a cache is one line per row whatever the cache holds (an imported
// name with an escape sequence or a newline), and its numbers have a point in any locale.
TEST_F(ConfigCacheTest, CliOutputIsEscapedAndInCNumbers) {
  const std::string c = config_of("mxfp4_gemm", 0);
  {
    ConfigCache cache(file_);
    Key k = key();
    k.device_name = "H200\x1b]0;pwned\x07\nFAKE LINE";
    // A failed config beside the best (a best whose own measurement failed would not stay).
    Measurement m = ok(config_of("mxfp4_gemm", 1), 2066820);
    m.error = "bad\r\x9b";
    m.status = Status::kLaunchFailed;
    cache.store(k, {m}, Best{c, 2066820, 0});
  }
  std::string out;
  ASSERT_EQ(cli("list", &out), 0) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("p50 2066.82 us  [H200\\x1b]0;pwned\\x07\\nFAKE LINE 9.0"), std::string::npos) << out;
  ASSERT_EQ(cli("show mxfp4_gemm M=8,N=4096,K=4096", &out), 0) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_NE(out.find("bad\\r\\x9b"), std::string::npos) << out;
  // Numbers: an integer formatting, checked here under a decimal-comma locale when there is one.
  if (std::setlocale(LC_ALL, "de_DE.UTF-8") || std::setlocale(LC_ALL, "de_DE.utf8")) {
    EXPECT_EQ(tunebench::cache::us_text(2066820), "2066.82");
    std::setlocale(LC_ALL, "C");
  }
  EXPECT_EQ(tunebench::cache::us_text(2066825), "2066.83");
  EXPECT_EQ(tunebench::cache::us_text(5), "0.01");
  EXPECT_EQ(tunebench::cache::us_text(1000), "1.00");
  EXPECT_EQ(tunebench::cache::us_text(std::nullopt), "-");
}

// bench on another application's SQLite file (or a cache of a newer schema): one line, exit 2,
// the file byte for byte as it was, nothing made beside it, no run folder.
TEST_F(ConfigCacheTest, BenchRefusesAForeignFileAndLeavesIt) {
  for (const char* sql : {"CREATE TABLE mine (x); INSERT INTO mine VALUES (1);",
                          "PRAGMA application_id = 1413631555; PRAGMA user_version = 9; CREATE TABLE t (x);"}) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    make_sqlite(file_, sql);
    const std::string before = bytes(file_);
    const std::string cmd = "cd '" + dir_.string() + "' && TUNEBENCH_CACHE='" + file_.string() + "' '" +
                            TUNEBENCH_BENCH_EXE + "' --tunebench_shapes='" + TUNEBENCH_SHAPE_DIR +
                            "' --benchmark_filter=cpu_mxfp4_gemm/dsv4f_decode_tp4/M:1/ > out.txt 2> err.txt";
    EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2) << sql;
    const std::string err = bytes(dir_ / "err.txt");
    EXPECT_EQ(err.rfind("bench: config cache " + file_.string(), 0), 0u) << err;
    EXPECT_NE(err.find(": left as it is;"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(bytes(file_), before);
    EXPECT_EQ(files_in(dir_), 3u) << "beside the file: only out.txt and err.txt";
  }
}

// Several processes storing sweeps of one key: the best a write leaves is the faster of the
// sweeps' winners (within the tie band, the later), whoever wrote last; a slower best stored
// later (another process's sweep, which did not time the faster config) does not win.
TEST_F(ConfigCacheTest, AWriteLeavesTheFasterWinnerWhoeverWritesLast) {
  ConfigCache a(file_);
  ConfigCache b(file_);
  a.store(key(), {ok("B=1", 1000), ok("B=2", 1100)}, Best{"B=1", 1000, 0});
  b.store(key(), {ok("B=2", 1090), ok("B=3", 1166)}, Best{"B=3", 1166, 0});
  ASSERT_TRUE(a.best(key()));
  EXPECT_EQ(a.best(key())->config, "B=1");
  EXPECT_EQ(a.best(key())->p50_ns, 1000);
  // Within the tie band (1%) of the fastest, a best is the tie rule's choice and stays.
  b.store(key(), {ok("B=4", 1008)}, Best{"B=4", 1008, 0});
  EXPECT_EQ(a.best(key())->config, "B=4");
  // Several keys in one transaction (a merge of shards) are settled too, each.
  b.store({{key("two"), {ok("B=1", 500)}, Best{"B=1", 500, 0}}, {key("two"), {ok("B=2", 800)}, Best{"B=2", 800, 0}}});
  EXPECT_EQ(a.best(key("two"))->config, "B=1");
  // The stored best's own later measurement counts: re-timed slower, it gives way to the next
  // sweep's winner.
  b.store(key(), {ok("B=4", 1500)}, std::nullopt);
  EXPECT_EQ(a.best(key())->config, "B=4");
  b.store(key(), {ok("B=5", 1400)}, Best{"B=5", 1400, 0});
  EXPECT_EQ(a.best(key())->config, "B=5");
  // An untimed best (one candidate) is kept.
  b.store(key("one"), {}, Best{"B=9", 0, 0});
  EXPECT_EQ(a.best(key("one"))->config, "B=9");
}

// A race stores the configs it dropped after one or two runs beside its winner's repetitions:
// those rows never displace the winner, even where a lucky run made one look faster.
TEST_F(ConfigCacheTest, ADroppedConfigsFewRunsNeverDisplaceTheWinner) {
  ConfigCache cache(file_);
  cache.store(key(), {ok("W", 1000), ok("D", 900)}, Best{"W", 1000, 0});
  ASSERT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.best(key())->config, "W");
  cache.store({{key("merge"), {ok("W", 1000), ok("D", 900)}, Best{"W", 1000, 0}}});
  EXPECT_EQ(cache.best(key("merge"))->config, "W");
}

// A best whose own measurement failed never stays: the fastest ok config takes its place, or,
// with none left, the best goes (the key is tuned again).
TEST_F(ConfigCacheTest, ABestWhoseMeasurementFailedIsRechosen) {
  ConfigCache cache(file_);
  cache.store(key(), {ok("B=1", 1000), ok("B=2", 1200)}, Best{"B=1", 1000, 0});
  const Measurement failed{"B=1", Status::kCompileFailed, std::nullopt, std::nullopt, std::nullopt, "no", 0, "", ""};
  cache.store(key(), {failed}, std::nullopt);
  ASSERT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.best(key())->config, "B=2");
  EXPECT_EQ(cache.best(key())->p50_ns, 1200);
  auto failed2 = failed;
  failed2.config = "B=2";
  cache.store(key(), {failed2}, std::nullopt);
  EXPECT_FALSE(cache.best(key()));
}

// A schema 3 cache (no leases) opens and is upgraded; its export says the current format.
TEST_F(ConfigCacheTest, SchemaThreeIsMigratedWithLeases) {
  {
    ConfigCache v4(file_);
    v4.store(key(), {ok("B=1", 500)}, Best{"B=1", 500, 0});
  }
  make_sqlite(file_, "DROP TABLE leases; PRAGMA user_version = 3;");
  {
    ConfigCache read(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead);
    EXPECT_EQ(read.database().user_version(), 3);  // read as it is
    EXPECT_FALSE(read.lease_holder(key()));
  }
  ConfigCache cache(file_);
  EXPECT_EQ(cache.database().user_version(), ConfigCache::kSchemaVersion);
  EXPECT_EQ(cache.best(key())->config, "B=1");
  EXPECT_TRUE(cache.claim(key()).ours());
  std::string out;
  EXPECT_EQ(cli("export '" + (dir_ / "e.json").string() + "'", &out), 0) << out;
  EXPECT_NE(bytes(dir_ / "e.json").find("\"tunebench_cache_schema\": 5"), std::string::npos);
}

// A schema 4 cache, whose measurements table refuses the status pruned, is read as it is and,
// opened for writing, made anew with every row kept; then a pruned row is stored and read back.
TEST_F(ConfigCacheTest, SchemaFourIsMigratedToTakePrunedRows) {
  {
    ConfigCache v5(file_);
    v5.store(key(), {ok("B=1", 500), ok("B=2", 700)}, Best{"B=1", 500, 0});
  }
  make_sqlite(file_,
              "CREATE TABLE m4 AS SELECT * FROM measurements; DROP TABLE measurements;"
              "CREATE TABLE measurements (op TEXT NOT NULL, kernel_version TEXT NOT NULL, tuning_key TEXT NOT NULL,"
              " device_name TEXT NOT NULL, device_cc TEXT NOT NULL, toolkit TEXT NOT NULL, timing_mode TEXT NOT NULL,"
              " config TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'compile_failed', 'launch_failed',"
              " 'wrong_result', 'timeout', 'unsupported')), p20_ns INTEGER, p50_ns INTEGER, p80_ns INTEGER,"
              " error TEXT NOT NULL DEFAULT '', measured_at INTEGER NOT NULL, device_uuid TEXT NOT NULL DEFAULT '',"
              " host TEXT NOT NULL DEFAULT '', PRIMARY KEY (op, kernel_version, tuning_key, device_name, device_cc,"
              " toolkit, timing_mode, config));"
              "INSERT INTO measurements SELECT * FROM m4; DROP TABLE m4; PRAGMA user_version = 4;");
  {
    ConfigCache read(file_, ConfigCache::OnDamage::kThrow, {}, tunebench::cache::Access::kRead);
    EXPECT_EQ(read.database().user_version(), 4);
    EXPECT_EQ(read.measurements(key()).size(), 2u);
  }
  ConfigCache cache(file_);
  EXPECT_EQ(cache.database().user_version(), ConfigCache::kSchemaVersion);
  EXPECT_EQ(cache.best(key())->config, "B=1");
  ASSERT_EQ(cache.measurements(key()).size(), 2u);
  Measurement pruned;
  pruned.config = "B=3";
  pruned.status = Status::kPruned;
  pruned.error = "pruned: 5.1x the best on M=64";
  cache.store(key(), {pruned}, std::nullopt);
  const auto m = cache.measurement(key(), "B=3");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, Status::kPruned);
  EXPECT_EQ(m->error, pruned.error);
  EXPECT_FALSE(m->p50_ns);
  EXPECT_EQ(cache.measurements(key()).size(), 3u);
  EXPECT_EQ(tunebench::cache::status_from_string("pruned"), Status::kPruned);
  // A pruned row fills a gap only: B=2's time stays; a time replaces B=3's pruned row.
  pruned.config = "B=2";
  cache.store(key(), {pruned}, std::nullopt);
  EXPECT_EQ(cache.measurement(key(), "B=2")->status, Status::kOk);
  EXPECT_EQ(*cache.measurement(key(), "B=2")->p50_ns, 700);
  cache.store(key(), {ok("B=3", 900)}, std::nullopt);
  EXPECT_EQ(cache.measurement(key(), "B=3")->status, Status::kOk);
}

// One holder at a time: a second holder of the same file is told who holds the key; released
// (or its object gone), the key is free.
TEST_F(ConfigCacheTest, ALeaseHasOneHolderAtATime) {
  ConfigCache b(file_);
  {
    ConfigCache a(file_);
    EXPECT_EQ(a.claim(key()).outcome, LeaseClaim::Outcome::kAcquired);
    EXPECT_EQ(a.claim(key()).outcome, LeaseClaim::Outcome::kAcquired);  // its own again
    const LeaseClaim other = b.claim(key());
    EXPECT_EQ(other.outcome, LeaseClaim::Outcome::kHeldByOther);
    ASSERT_TRUE(other.holder);
    EXPECT_EQ(other.holder->pid, getpid());
    EXPECT_TRUE(b.claim(key("free")).ours());
    a.release(key());
    EXPECT_EQ(b.claim(key()).outcome, LeaseClaim::Outcome::kAcquired);
    b.release(key());
    EXPECT_TRUE(a.claim(key()).ours());
  }
  EXPECT_EQ(b.claim(key()).outcome, LeaseClaim::Outcome::kAcquired);  // a's end released it
}

// The holder's process is gone (exited; a zombie not yet reaped counts as gone): taken over,
// saying so.
TEST_F(ConfigCacheTest, ALeaseOfAProcessThatIsGoneIsTakenOver) {
  { ConfigCache create(file_); }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      ConfigCache cache(file_);
      // No destructor: the lease stays, as after a SIGKILL.
      std::_Exit(cache.claim(key()).ours() ? 0 : 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
    }
    std::_Exit(1);
  }
  for (int i = 0; i < 200; ++i) {  // exited, not reaped: a zombie
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    if (text.find(") Z ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ConfigCache cache(file_);
  ASSERT_TRUE(cache.lease_holder(key()));
  EXPECT_EQ(cache.lease_holder(key())->pid, pid);
  const LeaseClaim zombie = cache.claim(key());
  EXPECT_EQ(zombie.outcome, LeaseClaim::Outcome::kTakenOver);
  EXPECT_EQ(zombie.why, "its process is gone");
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// A pid alive now but started at another time than the holder's is another process (a reused
// pid); the same start time is the holder itself.
TEST_F(ConfigCacheTest, AReusedPidIsNotTheHolder) {
  const auto me = tunebench::cache::this_process();
  ASSERT_NE(me.started, 0) << "no /proc start time on this system";
  ConfigCache cache(file_);
  const auto plant = [&](std::int64_t started) {
    make_sqlite(file_,
                "DELETE FROM leases; INSERT INTO leases VALUES ('mxfp4_gemm', 'k1', 'M=8,N=4096,K=4096', "
                "'NVIDIA H200', '9.0', 'cuda 13.0', 'kernel', 'h', '" +
                    me.instance + "', " + std::to_string(me.pid) + ", " + std::to_string(started) + ", 'someone', 0, " +
                    std::to_string(tunebench::cache::unix_ms() + 600000) + ", " +
                    std::to_string(tunebench::cache::unix_ms()) + ");");
  };
  plant(me.started + 12345);
  EXPECT_EQ(cache.claim(key()).outcome, LeaseClaim::Outcome::kTakenOver);
  plant(me.started);
  EXPECT_EQ(cache.claim(key()).outcome, LeaseClaim::Outcome::kHeldByOther);
}

// A holder on another host cannot be asked: its lease lapses when not renewed for the TTL. Its
// own heartbeat keeps a live holder's lease from lapsing.
TEST_F(ConfigCacheTest, AnotherHostsLeaseExpiresUnlessRenewed) {
  LeasePolicy quick;
  quick.ttl = std::chrono::milliseconds(400);
  ConfigCache cache(file_);
  cache.set_lease_policy(quick);
  make_sqlite(file_,
              "INSERT INTO leases VALUES ('mxfp4_gemm', 'k1', 'M=8,N=4096,K=4096', 'NVIDIA H200', '9.0', "
              "'cuda 13.0', 'kernel', 'node-9', 'another-boot/pid:[1]', 77, 5, 'remote', 0, " +
                  std::to_string(tunebench::cache::unix_ms() + 400) + ", " +
                  std::to_string(tunebench::cache::unix_ms()) + ");");
  const LeaseClaim held = cache.claim(key());
  EXPECT_EQ(held.outcome, LeaseClaim::Outcome::kHeldByOther);
  ASSERT_TRUE(held.holder);
  EXPECT_EQ(held.holder->describe(), "pid 77 on node-9");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const LeaseClaim lapsed = cache.claim(key());
  EXPECT_EQ(lapsed.outcome, LeaseClaim::Outcome::kTakenOver);
  EXPECT_NE(lapsed.why.find("its lease was not renewed for"), std::string::npos) << lapsed.why;
  // This object's heartbeat renews it: three TTLs later, it is still held.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  ASSERT_TRUE(cache.lease_holder(key()));
  EXPECT_GT(cache.lease_holder(key())->expires_ms, tunebench::cache::unix_ms());
}

// A live holder that makes no progress (a kernel that never returns) is taken over after
// stalled_after; one that says its work is ongoing (compiling, a watched sweep) is not.
TEST_F(ConfigCacheTest, AHolderWithoutProgressIsTakenOver) {
  LeasePolicy quick;
  quick.ttl = std::chrono::milliseconds(200);
  quick.stalled_after = std::chrono::milliseconds(400);
  ConfigCache a(file_);
  ConfigCache b(file_);
  a.set_lease_policy(quick);
  b.set_lease_policy(quick);
  ConfigCache c(file_);
  c.set_lease_policy(quick);
  c.note_progress(true);  // said before its first claim (a parent about to sweep)
  ASSERT_TRUE(c.claim(key("watched")).ours());
  ASSERT_TRUE(a.claim(key()).ours());
  a.note_progress(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_EQ(b.claim(key()).outcome, LeaseClaim::Outcome::kHeldByOther);
  EXPECT_EQ(b.claim(key("watched")).outcome, LeaseClaim::Outcome::kHeldByOther);
  a.note_progress(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  const LeaseClaim stalled = b.claim(key());
  EXPECT_EQ(stalled.outcome, LeaseClaim::Outcome::kTakenOver);
  EXPECT_NE(stalled.why.find("it made no progress for"), std::string::npos) << stalled.why;
}

// Import: a measurement or best of the same time as the cache's keeps the cache's (the file cannot
// be told newer), and a failed measurement of the key's best config re-chooses the best.
TEST_F(ConfigCacheTest, CliImportKeepsEqualTimesAndNeverLeavesAFailedBest) {
  const std::string c1 = config_of("mxfp4_gemm", 0), c2 = config_of("mxfp4_gemm", 1);
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Key k{"mxfp4_gemm", "k1", "M=8,N=4096,K=4096", "NVIDIA H200", "9.0", "cuda 13.0", "kernel"};
  {
    ConfigCache cache(file_);
    cache.store(k,
                {{c1, Status::kOk, 990, 1000, 1010, "", now - 100, "GPU-1", "h"},
                 {c2, Status::kOk, 1190, 1200, 1210, "", now - 100, "GPU-1", "h"}},
                Best{c1, 1000, now - 100});
  }
  const auto doc = [&](const nlohmann::json& measurement, const nlohmann::json& best) {
    nlohmann::json key = {
        {"op", k.op},         {"kernel_version", "k1"}, {"tuning_key", k.tuning_key}, {"device_name", k.device_name},
        {"device_cc", "9.0"}, {"toolkit", "cuda 13.0"}, {"timing_mode", "kernel"}};
    nlohmann::json e = {{"key", key}, {"best", best}, {"measurements", nlohmann::json::array({measurement})}};
    static int n = 0;
    const fs::path f = dir_ / ("eq" + std::to_string(n++) + ".json");
    std::ofstream(f) << nlohmann::json{{"tunebench_cache_schema", 3}, {"entries", nlohmann::json::array({e})}}.dump();
    return "'" + f.string() + "'";
  };
  std::string out;
  // Same second: the cache's rows stay.
  EXPECT_EQ(cli("import " + doc({{"config", c1},
                                 {"status", "ok"},
                                 {"p20_ns", 4990},
                                 {"p50_ns", 5000},
                                 {"p80_ns", 5010},
                                 {"error", ""},
                                 {"measured_at", now - 100},
                                 {"device_uuid", "GPU-2"},
                                 {"host", "x"}},
                                {{"config", c2}, {"p50_ns", 1200}, {"updated_at", now - 100}}),
                &out),
            0)
      << out;
  EXPECT_NE(out.find("nothing imported: the cache already holds 1 key of the file as new or newer (1 measurement, 1 "
                     "best config)"),
            std::string::npos)
      << out;
  {
    ConfigCache cache(file_);
    EXPECT_EQ(*cache.measurement(k, c1)->p50_ns, 1000);
    EXPECT_EQ(cache.best(k)->config, c1);
  }
  // A newer compile_failed row for the best config: the best is re-chosen, never the failure.
  EXPECT_EQ(cli("import " + doc({{"config", c1},
                                 {"status", "compile_failed"},
                                 {"p20_ns", nullptr},
                                 {"p50_ns", nullptr},
                                 {"p80_ns", nullptr},
                                 {"error", "ptxas"},
                                 {"measured_at", now - 50},
                                 {"device_uuid", ""},
                                 {"host", "x"}},
                                nullptr),
                &out),
            0)
      << out;
  ConfigCache cache(file_);
  EXPECT_EQ(cache.measurement(k, c1)->status, Status::kCompileFailed);
  ASSERT_TRUE(cache.best(k));
  EXPECT_EQ(cache.best(k)->config, c2);
}
