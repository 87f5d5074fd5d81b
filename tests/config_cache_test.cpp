#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tunebench/cache/config_cache.hpp"

namespace fs = std::filesystem;
using tunebench::cache::Best;
using tunebench::cache::ConfigCache;
using tunebench::cache::Key;
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

  fs::path dir_, file_;
};

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

TEST_F(ConfigCacheTest, StoreGetAndEraseAreReal) {
  ConfigCache cache(file_);
  EXPECT_FALSE(cache.best(key()));
  const Measurement failed{"B=2", Status::kCompileFailed, std::nullopt, std::nullopt, std::nullopt,
                           "error: too many resources", 0, "GPU-1", ""};
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

TEST_F(ConfigCacheTest, GarbageFileIsMovedAsideAndAFreshCacheStarts) {
  std::ofstream(file_) << std::string(10000, 'x');
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("WARNING: config cache"), std::string::npos) << err;
  ASSERT_TRUE(cache.moved_aside());
  EXPECT_EQ(fs::file_size(*cache.moved_aside()), 10000u);  // kept, not deleted
  cache.store(key(), {ok("B=1", 5)}, Best{"B=1", 5, 0});
  EXPECT_EQ(cache.best(key())->config, "B=1");
}

TEST_F(ConfigCacheTest, DamagedPagesAreDetected) {
  {
    ConfigCache cache(file_);
    std::vector<Measurement> ms;
    for (int i = 0; i < 300; ++i) ms.push_back(ok("B=" + std::to_string(i) + std::string(100, 'p'), i));
    cache.store(key(), ms, Best{"B=1", 1, 0});
    cache.database().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 2);  // a whole b-tree page, header included
    f << std::string(4096, '\x5a');
  }
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(cache.moved_aside());
  EXPECT_EQ(count_aside(dir_), 1u);
  EXPECT_FALSE(cache.best(key()));
  EXPECT_EQ(cache.database().integrity_check(), "ok");
}

TEST_F(ConfigCacheTest, ForeignDatabaseIsMovedAsideNotModified) {
  {
    tunebench::cache::Database other(file_);
    other.exec("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (42);");
  }
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("not a tunebench config cache"), std::string::npos) << err;
  ASSERT_TRUE(cache.moved_aside());
  tunebench::cache::Database kept(*cache.moved_aside());
  kept.exec("SELECT x FROM mine");  // still the other program's data
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

TEST_F(ConfigCacheTest, NewerSchemaIsNotTouched) {
  {
    tunebench::cache::Database future(file_);
    future.exec("PRAGMA application_id = 1413631555; PRAGMA user_version = 99; CREATE TABLE t (x);");
  }
  testing::internal::CaptureStderr();
  ConfigCache cache(file_);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("newer tunebench"), std::string::npos);
  EXPECT_TRUE(cache.moved_aside());
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
  {
    ConfigCache cache(file_);
    cache.store(key(), {ok("B=1", 2000), ok("B=2", 1500)}, Best{"B=2", 1500, 0});
    cache.store(key("M=1,N=4096,K=4096"), {ok("B=1", 900)}, Best{"B=1", 900, 0});
  }
  const std::string cli = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + file_.string() + "' ";
  const auto run = [&](const std::string& args, std::string* out = nullptr) {
    const std::string cmd = cli + args + " > '" + (dir_ / "out.txt").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    if (out) {
      std::ifstream f(dir_ / "out.txt");
      *out = std::string(std::istreambuf_iterator<char>(f), {});
    }
    return WEXITSTATUS(rc);
  };
  std::string out;
  EXPECT_EQ(run("list", &out), 0);
  EXPECT_NE(out.find("M=8,N=4096,K=4096  B=2  p50 1.50 us"), std::string::npos) << out;
  EXPECT_EQ(run("show mxfp4_gemm M=8,N=4096,K=4096", &out), 0);
  EXPECT_NE(out.find("best: B=2"), std::string::npos) << out;
  EXPECT_EQ(run("export '" + (dir_ / "export.json").string() + "'"), 0);
  EXPECT_EQ(run("evict mxfp4_gemm M=8,N=4096,K=4096 B=2", &out), 0);
  EXPECT_NE(out.find("evicted 2 rows"), std::string::npos) << out;
  EXPECT_EQ(run("evict mxfp4_gemm M=8,N=4096,K=4096 B=2"), 1);  // nothing left to evict
  EXPECT_EQ(run("show nope nope"), 1);
  EXPECT_EQ(run("frobnicate", &out), 2);
  EXPECT_NE(out.find("'frobnicate': unknown command"), std::string::npos) << out;
  EXPECT_EQ(run("show mxfp4_gemm", &out), 2);
  EXPECT_NE(out.find("show: wrong number of arguments (1)"), std::string::npos) << out;
  EXPECT_EQ(run("list --cache=other.sqlite", &out), 2);
  EXPECT_NE(out.find("list: '--cache=other.sqlite' is an option and comes before the command"), std::string::npos) << out;
  {
    ConfigCache cache(file_);
    EXPECT_FALSE(cache.best(key()));
  }
  EXPECT_EQ(run("import '" + (dir_ / "export.json").string() + "'", &out), 0) << out;
  ConfigCache cache(file_);
  ASSERT_TRUE(cache.best(key()));
  EXPECT_EQ(cache.best(key())->config, "B=2");
  EXPECT_EQ(cache.measurements(key()).size(), 2u);
  std::ofstream(dir_ / "bad.json") << "{\"tunebench_cache_schema\": 1, \"entries\": [{\"key\": 3}]}";
  EXPECT_EQ(run("import '" + (dir_ / "bad.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("entries[0]: expected an object holding \"op\", got 3"), std::string::npos) << out;
  std::ifstream exported(dir_ / "export.json");
  std::string text((std::istreambuf_iterator<char>(exported)), {});
  const auto at = text.find("\"p50_ns\": 1500");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "\"p50_ns\": -1500");
  std::ofstream(dir_ / "negative.json") << text;
  EXPECT_EQ(run("import '" + (dir_ / "negative.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("negative"), std::string::npos) << out;
  // Wrong types and empty key fields are named, without the JSON library's wording.
  std::ofstream(dir_ / "types.json") << R"({"tunebench_cache_schema": 1, "entries": [{"key": {"op": 3}}]})";
  EXPECT_EQ(run("import '" + (dir_ / "types.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("entries[0]: \"op\": expected a string, got 3"), std::string::npos) << out;
  std::ofstream(dir_ / "empty_op.json")
      << R"({"tunebench_cache_schema": 1, "entries": [{"key": {"op": "", "kernel_version": "v", "tuning_key": "M=1", "device_name": "d",
            "device_cc": "9.0", "toolkit": "t", "timing_mode": "kernel"}, "measurements": [], "best": null}]})";
  EXPECT_EQ(run("import '" + (dir_ / "empty_op.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("\"op\": expected a non-empty string"), std::string::npos) << out;
  // Merging keeps what the cache learnt later: an export whose best is older changes no best.
  {
    std::ifstream f(dir_ / "export.json");
    std::string old((std::istreambuf_iterator<char>(f)), {});
    for (std::size_t u = 0; (u = old.find("\"updated_at\": ", u)) != std::string::npos;) {
      const auto end = old.find_first_of(",\n}", u + 14);
      old.replace(u + 14, end - (u + 14), "1");
      u += 15;
    }
    const auto cfg = old.find("\"config\": \"B=2\"");  // the first best is key()'s
    ASSERT_NE(cfg, std::string::npos);
    old.replace(cfg, 15, "\"config\": \"B=1\"");
    std::ofstream(dir_ / "old.json") << old;
  }
  EXPECT_EQ(run("import '" + (dir_ / "old.json").string() + "'", &out), 0) << out;
  EXPECT_NE(out.find("best configs)"), std::string::npos) << out;
  {
    ConfigCache merged(file_);
    EXPECT_EQ(merged.best(key())->config, "B=2");
  }
  std::ofstream(dir_ / "noschema.json") << R"({"entries": []})";
  EXPECT_EQ(run("import '" + (dir_ / "noschema.json").string() + "'", &out), 2);
  EXPECT_NE(out.find("\"tunebench_cache_schema\": expected an integer"), std::string::npos) << out;
  EXPECT_EQ(run("export '" + file_.string() + "'", &out), 2);  // would overwrite the cache
  const std::string missing = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + (dir_ / "none.sqlite").string() + "' list >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(missing.c_str())), 2);
  EXPECT_FALSE(fs::exists(dir_ / "none.sqlite"));  // a read-only command creates nothing
  std::ofstream(dir_ / "empty.sqlite").flush();
  const std::string empty = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + (dir_ / "empty.sqlite").string() + "' list >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(empty.c_str())), 2);
  EXPECT_EQ(fs::file_size(dir_ / "empty.sqlite"), 0u);  // nor turns an empty file into a cache
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
  for (const char* suffix : {"-journal", "-wal", "-shm"}) before.push_back(fs::exists(std::string("/dev/null") + suffix));
  try {
    ConfigCache cache("/dev/null");
    FAIL() << "/dev/null was opened as a cache";
  } catch (const tunebench::cache::SqliteError& e) {
    EXPECT_NE(std::string(e.what()).find("config cache /dev/null: is not a regular file"), std::string::npos) << e.what();
  }
  int i = 0;
  for (const char* suffix : {"-journal", "-wal", "-shm"}) {
    EXPECT_EQ(fs::exists(std::string("/dev/null") + suffix), before[i++]) << suffix;
  }
}

TEST_F(ConfigCacheTest, TwoCorruptFilesInOneSecondAreBothKept) {
  for (int i = 0; i < 2; ++i) {
    std::ofstream(file_) << std::string(5000 + i, 'x');
    testing::internal::CaptureStderr();
    ConfigCache cache(file_);
    testing::internal::GetCapturedStderr();
  }
  EXPECT_EQ(count_aside(dir_), 2u);
}

TEST_F(ConfigCacheTest, CliInspectionLeavesADamagedFileAlone) {
  {
    std::ofstream(file_) << "not a database, but somebody's data";
  }
  const std::string cmd = std::string("'") + TUNEBENCH_CACHE_CLI + "' --cache='" + file_.string() + "' list > '" +
                          (dir_ / "out.txt").string() + "' 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  std::ifstream out(dir_ / "out.txt");
  const std::string text(std::istreambuf_iterator<char>(out), {});
  EXPECT_NE(text.find("is not an SQLite database (left as it is"), std::string::npos) << text;
  std::ifstream kept(file_);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "not a database, but somebody's data");
  int others = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) others += e.path().filename().string().find(".corrupt-") != std::string::npos;
  EXPECT_EQ(others, 0);
}

TEST_F(ConfigCacheTest, OnDamageThrowLeavesTheFileAndThrows) {
  {
    std::ofstream(file_) << "garbage";
  }
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
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
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
