#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/atomic_file.hpp"

namespace fs = std::filesystem;

namespace {

fs::path scratch_dir(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("tunebench_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(AtomicFile, ReplacesTheWholeContentAndLeavesNoTemporaryFile) {
  const auto dir = scratch_dir("atomic_file");
  const auto file = dir / "data.bin";
  tunebench::write_file_atomically(file, std::string(4096, 'a'));
  EXPECT_EQ(read_all(file), std::string(4096, 'a'));
  // Shorter content: nothing of the old file may survive past the new end.
  const std::string binary("x\0y\n", 4);
  tunebench::write_file_atomically(file, binary);
  EXPECT_EQ(read_all(file), binary);
  tunebench::write_file_atomically(file, "");
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(fs::file_size(file), 0u);
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "data.bin");
  }
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dir);
}

TEST(AtomicFile, AMissingFolderIsAnErrorNamingTheFile) {
  const auto dir = scratch_dir("atomic_file_missing");
  const auto file = dir / "no_such_folder" / "configs.json";
  try {
    tunebench::write_file_atomically(file, "{}");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST(AtomicFile, ATargetThatCannotBeReplacedKeepsItsContentAndLeavesNoTemporaryFile) {
  const auto dir = scratch_dir("atomic_file_dir_target");
  // A non-empty folder where the file should go: the rename fails after the write succeeded.
  const auto target = dir / "configs.json";
  fs::create_directories(target / "inside");
  EXPECT_THROW(tunebench::write_file_atomically(target, "{}"), std::runtime_error);
  EXPECT_TRUE(fs::is_directory(target / "inside"));
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++entries;
    (void)e;
  }
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dir);
}
