#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "context/config_choice.hpp"
#include "host_op.hpp"

namespace fs = std::filesystem;
using tunebench::Config;

namespace {

// Three host configs B=1..3 (the tests' timers make B=2 the fastest).
tunebench::testing::HostOp TwoFastOp() { return tunebench::testing::HostOp("two_fast", {1, 2, 3}); }

}  // namespace

// Another process inside BEGIN IMMEDIATE past the store's retries: the sweep's winner is still
// the benchmark's config, said in one line on stderr, and a later choice of the same key takes
// it from memory without sweeping again.
TEST(ConfigChoice, ABusyCacheKeepsTheSweepsWinnerForTheRun) {
  const fs::path dir = fs::temp_directory_path() / ("tunebench_choice_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "configs.sqlite";
  tunebench::RunContext context;
  tunebench::ChoiceLog choices;
  context.host_name = "test cpu";
  context.cache = std::make_shared<tunebench::cache::ConfigCache>(
      file, tunebench::cache::ConfigCache::OnDamage::kMoveAside,
      tunebench::cache::BusyPolicy{std::chrono::milliseconds(20), std::chrono::milliseconds(100)});
  context.tune.budget_per_config = std::chrono::milliseconds(1);
  const tunebench::Family family{"two_fast/s/M:8/N:64/K:64", std::make_shared<tunebench::testing::HostOp>(TwoFastOp()),
                                 tunebench::Shape{"s", "w", 8, 64, 64, 0, 0, std::nullopt}};
  std::atomic<int> runs{0};
  const tunebench::RunTimer timer = tunebench::run_by_run([&](const Config& c) {
    ++runs;
    return std::chrono::nanoseconds(c.get("B") == 2 ? 1000 : 5000);
  });

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open_v2(file.c_str(), &other, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  ::testing::internal::CaptureStderr();
  std::pair<Config, tunebench::ConfigSource> chosen;
  EXPECT_NO_THROW(chosen = tunebench::choose_config(family, context, choices, timer));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(chosen.first.str(), "B=2");
  EXPECT_EQ(chosen.second, tunebench::ConfigSource::kTuned);
  EXPECT_NE(err.find("not stored, kept for this run only"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

  const int swept_runs = runs;
  const auto again = tunebench::choose_config(family, context, choices, timer);
  EXPECT_EQ(again.first.str(), "B=2");
  EXPECT_EQ(runs, swept_runs) << "the key was swept again";

  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_FALSE(context.cache->best(tunebench::cache_key(*family.op, family.shape, context)));
  context.cache.reset();
  fs::remove_all(dir);
}
