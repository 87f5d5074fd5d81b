// The launcher's variables and a rank's GPU, read before MPI starts (sweep/mpi/mpi_session.hpp): no
// MPI library or launcher needed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "sweep/mpi/mpi_child.hpp"
#include "sweep/mpi/mpi_session.hpp"

namespace {

using tunebench::detect_launch;
using tunebench::rank_device;

tunebench::Settings with(std::map<std::string, std::string> vars) {
  tunebench::Settings s;
  s.launcher = std::move(vars);
  return s;
}

TEST(MpiLaunch, ReadsOpenMpiSlurmAndMpichVariables) {
  auto l = detect_launch(
      with({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT_EQ(l.size, 4);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.local_rank, 1);
  l = detect_launch(with({{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}}));
  EXPECT_EQ(l.size, 8);
  EXPECT_EQ(l.rank, 7);
  l = detect_launch(with({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}}));
  EXPECT_EQ(l.size, 2);
  EXPECT_EQ(l.local_rank, -1);  // MPICH without MPI_LOCALRANKID: MPI's shared-memory split decides
  EXPECT_EQ(detect_launch(with({})).size, 1);
}

TEST(MpiLaunch, ARankBeyondTheJobsSizeIsOneLineNamingTheVariables) {
  try {
    detect_launch(with({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "5"}}));
    FAIL() << "rank 5 of 2 accepted";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("OMPI_COMM_WORLD_RANK=5"), std::string::npos) << m;
    EXPECT_NE(m.find("OMPI_COMM_WORLD_SIZE=2"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(MpiLaunch, EachLocalRankGetsItsOwnEntryAndNoneIsShared) {
  EXPECT_EQ(rank_device(1, {"4", "5"}, "h"), "5");
  EXPECT_EQ(rank_device(0, {}, "h"), "");  // no GPU: host ops only
  EXPECT_THROW(rank_device(2, {"4", "5"}, "h"), std::invalid_argument);
  try {
    rank_device(1, {"0", "0"}, "h");
    FAIL() << "two ranks on GPU 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'0' twice"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rank_device(0, {"0", "0"}, "h"), "0");  // the first of the two is still its own
}

}  // namespace

// A rank's sweep child runs on the rank's entry, else on the devices the settings table read:
// not on whatever CUDA_VISIBLE_DEVICES says by the time the child starts.
TEST(MpiLaunch, ARanksChildGetsItsEntryElseTheSettingsDevices) {
  tunebench::Settings s;
  s.visible_devices = "3,4";
  const char* was = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = was ? was : "";
  ::setenv("CUDA_VISIBLE_DEVICES", "9", 1);
  EXPECT_EQ(tunebench::rank_child_devices("5", s), "5");
  EXPECT_EQ(tunebench::rank_child_devices("", s), "3,4");
  s.visible_devices.reset();
  EXPECT_EQ(tunebench::rank_child_devices("", s), "");  // no entry: the child sees no GPU, as its rank
  if (was) {
    ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  } else {
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
}
