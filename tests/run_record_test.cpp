#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "context/context_setup.hpp"
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

// A configs.json that is JSON but not a run record ({} or a list) is named as such, without the
// format's marker key, which the user never wrote.
TEST(RunRecord, JsonThatIsNotARunRecordIsNamedAsSuch) {
  const auto dir = fs::temp_directory_path() / ("tunebench_not_a_record_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* text : {"{}", "[]", R"({"configs": []})"}) {
    std::ofstream(dir / "configs.json") << text;
    try {
      tunebench::RunRecord::read(dir);
      ADD_FAILURE() << text << " was read as a run record";
    } catch (const tunebench::ReplayError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("configs.json: not a tunebench run record (expected the configs.json that bench writes"),
                std::string::npos)
          << what;
      EXPECT_EQ(what.find("tunebench_run_record"), std::string::npos) << what;
    }
  }
  fs::remove_all(dir);
}

// An edited record is refused naming what is wrong with it: the field and its benchmark, or
// that the file is empty.
TEST(RunRecord, AnEditedRecordNamesTheFieldAndTheBenchmark) {
  const auto dir = fs::temp_directory_path() / ("tunebench_edited_record_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string entry =
      R"("benchmark": "op/a", "op": "op", "kernel_version": "op-1", "tuning_key": "M=1", "device": "cpu", )"
      R"("source": "tuned")";
  const std::pair<std::string, std::string> cases[] = {
      {"", "configs.json: empty (expected the configs.json that bench writes"},
      {" \n", "configs.json: empty ("},
      {R"({"tunebench_run_record": 1, "configs": 5})", R"(configs.json: "configs" is not a list)"},
      {R"({"tunebench_run_record": 1, "configs": [5]})", R"(configs.json: configs[0] is not an object: 5)"},
      {R"({"tunebench_run_record": 1, "configs": [{)" + entry + R"(, "config": 5}]})",
       R"(configs.json: benchmark op/a has "config": 5, expected a string)"},
      {R"({"tunebench_run_record": 1, "configs": [{)" + entry + "}]}",
       R"(configs.json: benchmark op/a has no "config")"},
  };
  for (const auto& [text, expected] : cases) {
    std::ofstream(dir / "configs.json") << text;
    try {
      tunebench::RunRecord::read(dir);
      ADD_FAILURE() << text << " was read as a run record";
    } catch (const tunebench::ReplayError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << text << " -> " << e.what();
    }
  }
  fs::remove_all(dir);
}

// REPLAY_FROM's timing: a run that times GPU ops refuses a record timed otherwise (`host`, a run
// of host ops alone, included); a run of host ops alone replays any record, since its ops are
// host-timed whatever the recorded run's GPU timing was.
TEST(Replay, TheRecordedTimingIsCheckedWhereTheRunTimesGpuOps) {
  const auto dir = fs::temp_directory_path() / ("tunebench_replay_timing_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "configs.json") << R"({"tunebench_run_record": 1, "configs": []})";
  const auto manifest = [&](const std::string& timing) {
    std::ofstream(dir / "manifest.json") << R"({"status": "complete", "device": "Some GPU", "timing_mode": ")" << timing
                                         << "\"}";
  };
  tunebench::RunContext gpu_run;
  gpu_run.gpu_available = true;
  gpu_run.device.name = "Some GPU";
  gpu_run.timing_mode = tunebench::TimingMode::kKernel;
  gpu_run.times_gpu_ops = true;
  tunebench::RunContext host_run = gpu_run;
  host_run.times_gpu_ops = false;
  EXPECT_EQ(tunebench::run_timing_name(gpu_run), "kernel");
  EXPECT_EQ(tunebench::run_timing_name(host_run), "host");
  for (const std::string timing : {"event", "host"}) {
    manifest(timing);
    try {
      tunebench::load_replay(dir, {}, gpu_run);
      ADD_FAILURE() << "a record timed " << timing << " was replayed by a kernel-timed run";
    } catch (const tunebench::ReplayError& e) {
      EXPECT_NE(std::string(e.what()).find("timing_mode '" + timing + "', this run's is 'kernel'"), std::string::npos)
          << e.what();
    }
    EXPECT_NO_THROW(tunebench::load_replay(dir, {}, host_run)) << timing;
  }
  manifest("kernel");
  EXPECT_NO_THROW(tunebench::load_replay(dir, {}, gpu_run));
  fs::remove_all(dir);
}
