#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tunebench/cache/database.hpp"

namespace fs = std::filesystem;
using tunebench::cache::Database;

TEST(CacheDatabase, CreatesFolderUsesWalAndReportsIntegrity) {
  const auto dir = fs::temp_directory_path() / ("tunebench_db_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    Database db(dir / "sub" / "c.sqlite");
    EXPECT_EQ(db.user_version(), 0);
    db.exec("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1); PRAGMA user_version=3;");
    EXPECT_EQ(db.user_version(), 3);
    EXPECT_EQ(db.integrity_check(), "ok");
    Database moved(std::move(db));
    EXPECT_EQ(moved.user_version(), 3);
    EXPECT_THROW(moved.exec("SELEC nonsense"), tunebench::cache::SqliteError);
  }
  EXPECT_TRUE(fs::exists(dir / "sub" / "c.sqlite"));
  {
    std::ofstream(dir / "junk.sqlite") << std::string(8192, 'x');
    try {
      Database junk(dir / "junk.sqlite");
      junk.integrity_check();
      FAIL() << "a file that is not a database was accepted";
    } catch (const tunebench::cache::SqliteError& e) {
      EXPECT_EQ(e.code(), SQLITE_NOTADB) << e.what();
      EXPECT_NE(std::string(e.what()).find("junk.sqlite"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(CacheDatabase, DefaultPathFollowsXdg) {
  using tunebench::cache::default_cache_path;
  EXPECT_EQ(default_cache_path({"/x/own.sqlite", "/xdg", "/home/u"}), "/x/own.sqlite");
  EXPECT_EQ(default_cache_path({nullptr, "/xdg", "/home/u"}), "/xdg/tunebench/configs.sqlite");
  EXPECT_EQ(default_cache_path({nullptr, "relative/ignored", "/home/u"}), "/home/u/.cache/tunebench/configs.sqlite");
  EXPECT_THROW(default_cache_path({nullptr, nullptr, nullptr}), std::runtime_error);
  // Set but empty is unset (tunebench's rule for every variable, and the XDG specification's).
  EXPECT_EQ(default_cache_path({"", "/xdg", "/home/u"}), "/xdg/tunebench/configs.sqlite");
}

// A probe (what the config cache uses to tell whose a file is) writes nothing and makes nothing
// beside a WAL file, where a plain read-only connection would leave a -wal and a -shm.
TEST(CacheDatabase, AProbeMakesNothingBesideTheFile) {
  const auto dir = fs::temp_directory_path() / ("tunebench_db_probe_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    Database db(dir / "w.sqlite");  // WAL mode, as every cache
    db.exec("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (7); PRAGMA application_id = 5;");
  }
  ASSERT_FALSE(fs::exists(dir / "w.sqlite-wal"));
  const auto size = fs::file_size(dir / "w.sqlite");
  {
    Database probe(dir / "w.sqlite", 1000, tunebench::cache::Access::kProbe);
    EXPECT_EQ(probe.application_id(), 5);
    EXPECT_TRUE(probe.read_only());
    EXPECT_THROW(probe.exec("INSERT INTO t VALUES (8)"), tunebench::cache::SqliteError);
  }
  EXPECT_FALSE(fs::exists(dir / "w.sqlite-wal"));
  EXPECT_FALSE(fs::exists(dir / "w.sqlite-shm"));
  EXPECT_EQ(fs::file_size(dir / "w.sqlite"), size);
  fs::remove_all(dir);
}
