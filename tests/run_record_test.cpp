#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "context/run_record.hpp"

namespace fs = std::filesystem;

TEST(RunRecord, TwoRunsInOneSecondGetTheirOwnDirectories) {
  const auto root = fs::temp_directory_path() / ("tunebench_runs_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::time_t now = 1795000000;
  const auto a = tunebench::claim_run_dir(root, now);
  const auto b = tunebench::claim_run_dir(root, now);
  const auto c = tunebench::claim_run_dir(root, now);
  EXPECT_NE(a, b);
  EXPECT_EQ(b.filename().string(), a.filename().string() + "-2");
  EXPECT_EQ(c.filename().string(), a.filename().string() + "-3");
  EXPECT_TRUE(fs::is_directory(a) && fs::is_directory(b) && fs::is_directory(c));

  tunebench::RunRecord record;
  record.add({"op/set/M:1/N:64/K:64", "op", "k1", "M=1,N=64,K=64", "GPU", "B=1", tunebench::ConfigSource::kTuned});
  record.add({"op/set/M:1/N:64/K:64", "op", "k1", "M=1,N=64,K=64", "GPU", "B=2",
              tunebench::ConfigSource::kCache});  // kept first
  record.add({"op/set/M:2/N:64/K:64", "op", "k1", "M=2,N=64,K=64", "GPU", "B=3", tunebench::ConfigSource::kReplayed});
  record.write(a);
  const auto back = tunebench::RunRecord::read(a);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].config, "B=1");
  EXPECT_STREQ(to_string(back[1].source), "replayed");
  EXPECT_THROW(tunebench::RunRecord::read(b), tunebench::ReplayError);
  std::ofstream(b / "configs.json") << "{\"tunebench_run_record\": 7, \"configs\": []}";
  EXPECT_THROW(tunebench::RunRecord::read(b), tunebench::ReplayError);
  fs::remove_all(root);
}
