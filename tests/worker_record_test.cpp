#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sweep/worker_record.hpp"

namespace fs = std::filesystem;
using tunebench::RecordReader;
using tunebench::RecordWriter;
using tunebench::WorkerRecord;

namespace {

fs::path scratch(const char* name) {
  const fs::path p = fs::temp_directory_path() / ("tunebench-records-" + std::to_string(::getpid()) + "-" + name);
  fs::remove(p);
  return p;
}

}  // namespace

TEST(WorkerRecord, EveryKindRoundTripsThroughOneJsonLine) {
  const std::vector<WorkerRecord> records = {
      {WorkerRecord::Kind::kStarted, "", "", 0, "6 (GPU-1234)"},
      {WorkerRecord::Kind::kPreparing, "op/set/M:1/N:64/K:64/manual", "", 0, ""},
      {WorkerRecord::Kind::kCompiling, "op/set/M:1/N:64/K:64/manual", "", 0, ""},
      {WorkerRecord::Kind::kTiming, "op/set/M:1/N:64/K:64/manual", "BLOCK_N=16,BLOCK_K=128", 0, ""},
      {WorkerRecord::Kind::kTuned, "op/set/M:1/N:64/K:64/manual", "", 1.25, ""}};
  for (const auto& r : records) {
    const std::string line = tunebench::to_json_line(r);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    const auto back = tunebench::parse_record_line(line);
    ASSERT_TRUE(back) << line;
    EXPECT_EQ(back->kind, r.kind) << line;
    EXPECT_EQ(back->key, r.key) << line;
    EXPECT_EQ(back->config, r.config) << line;
    EXPECT_EQ(back->seconds, r.seconds) << line;
    EXPECT_EQ(back->device, r.device) << line;
  }
  // Human text, a torn line and a record of an unknown kind are not records.
  for (const char* bad : {"tunebench-shard: tuned x in 1.0 s", "{\"record\": \"tuned\", \"key\": \"x\", \"sec",
                          "{\"record\": \"exploded\", \"key\": \"x\"}", "{\"record\": \"tuned\", \"key\": \"x\"}"}) {
    EXPECT_FALSE(tunebench::parse_record_line(bad)) << bad;
  }
}

// A tuned key says how long its worker waited for its configs to be compiled: exposed compile
// time, which the parent adds up.
TEST(WorkerRecord, ATunedKeyCarriesItsCompileWait) {
  WorkerRecord tuned{WorkerRecord::Kind::kTuned, "op/set/M:1/N:64/K:64/manual", "", 1.25, ""};
  tuned.compile_wait_s = 0.75;
  const std::string line = tunebench::to_json_line(tuned);
  EXPECT_NE(line.find("\"compile_wait_seconds\":0.75"), std::string::npos) << line;
  const auto back = tunebench::parse_record_line(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->compile_wait_s, 0.75);
  // A record of a worker from before it is read as no wait.
  const auto old = tunebench::parse_record_line(R"({"record":"tuned","key":"x","seconds":1})");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->compile_wait_s, 0);
}

// A shard waiting for the host's cores (another shard times a host op) says so, with its key.
TEST(WorkerRecord, WaitingForTheHostsCoresIsARecord) {
  const auto line = tunebench::to_json_line({WorkerRecord::Kind::kWaiting, "cpu/set/M:1/N:64/K:64/manual", "", 0, ""});
  EXPECT_EQ(line, R"({"key":"cpu/set/M:1/N:64/K:64/manual","record":"waiting"})");
  const auto back = tunebench::parse_record_line(line);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, WorkerRecord::Kind::kWaiting);
  EXPECT_EQ(back->key, "cpu/set/M:1/N:64/K:64/manual");
}

TEST(WorkerRecord, ReaderReturnsEachCompletedLineOnceAndWaitsForATornOne) {
  const fs::path file = scratch("reader");
  RecordReader reader(file);
  EXPECT_TRUE(reader.poll().empty());  // no file yet
  {
    RecordWriter writer(file);
    writer.write({WorkerRecord::Kind::kPreparing, "a", "", 0, ""});
    writer.write({WorkerRecord::Kind::kTuned, "a", "", 2.5, ""});
  }
  auto got = reader.poll();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].kind, WorkerRecord::Kind::kTuned);
  EXPECT_EQ(got[1].seconds, 2.5);
  EXPECT_TRUE(reader.poll().empty());  // nothing new
  // A worker killed halfway through a write: the half line is held until it is completed.
  const std::string line = tunebench::to_json_line({WorkerRecord::Kind::kTiming, "b", "C=1", 0, ""});
  std::ofstream(file, std::ios::app) << line.substr(0, 10);
  EXPECT_TRUE(reader.poll().empty());
  std::ofstream(file, std::ios::app) << line.substr(10) << "\n";
  got = reader.poll();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].config, "C=1");
  fs::remove(file);
}

TEST(WorkerRecord, WriterNamesAFileItCannotOpen) {
  try {
    RecordWriter writer("/nonexistent-folder/records");
    ADD_FAILURE() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/records"), std::string::npos);
  }
}
