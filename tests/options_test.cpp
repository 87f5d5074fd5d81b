#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "settings/options.hpp"

namespace {

struct Argv {
  explicit Argv(std::vector<std::string> args) : store(std::move(args)) {
    for (auto& s : store) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(store.size());
  }
  std::vector<std::string> store;
  std::vector<char*> ptrs;
  int argc;
};

std::string error_of(std::vector<std::string> args) {
  Argv a(std::move(args));
  try {
    tunebench::parse_options(&a.argc, a.ptrs.data(), "default");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Options, TakesTunebenchFlagsAndLeavesTheRest) {
  ::unsetenv("TUNEBENCH_SHAPES");
  ::unsetenv("TUNEBENCH_SEED");
  Argv a({"bench", "--benchmark_filter=x", "--tunebench_shapes=/tmp/s.yaml", "--tunebench_seed=9", "y"});
  const auto opt = tunebench::parse_options(&a.argc, a.ptrs.data(), "default");
  EXPECT_EQ(opt.shapes, "/tmp/s.yaml");
  EXPECT_EQ(opt.seed, 9u);
  ASSERT_EQ(a.argc, 3);
  EXPECT_STREQ(a.ptrs[1], "--benchmark_filter=x");
  EXPECT_STREQ(a.ptrs[2], "y");
  EXPECT_EQ(a.ptrs[3], nullptr);
}

TEST(Options, EnvironmentIsTheFallbackAndIsChecked) {
  ::setenv("TUNEBENCH_SHAPES", "/from/env", 1);
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_options(&a.argc, a.ptrs.data(), "default").shapes, "/from/env");
  }
  ::setenv("TUNEBENCH_SHAPES", "", 1);
  EXPECT_NE(error_of({"bench"}).find("TUNEBENCH_SHAPES is set but empty"), std::string::npos);
  ::unsetenv("TUNEBENCH_SHAPES");
  ::setenv("TUNEBENCH_SEED", "-3", 1);
  EXPECT_EQ(error_of({"bench"}), "TUNEBENCH_SEED='-3': expected a non-negative integer below 2^64");
  EXPECT_EQ(error_of({"bench", "--tunebench_seed=4"}), "");  // the flag wins; the variable is unused
  ::unsetenv("TUNEBENCH_SEED");
  Argv a({"bench"});
  EXPECT_EQ(tunebench::parse_options(&a.argc, a.ptrs.data(), "default").shapes, "default");
}

TEST(Options, BadFlagsAreOneLineErrors) {
  EXPECT_EQ(error_of({"bench", "--tunebench_seed=abc"}), "--tunebench_seed='abc': expected a non-negative integer below 2^64");
  EXPECT_EQ(error_of({"bench", "--tunebench_shapes"}), "--tunebench_shapes: expected --tunebench_shapes=VALUE");
  EXPECT_NE(error_of({"bench", "--tunebench_shape=x"}).find("--tunebench_shape: unknown flag"), std::string::npos);
}

TEST(Options, TimingModesAndColdL2) {
  ::unsetenv("TUNEBENCH_TIMING");
  ::unsetenv("TUNEBENCH_COLD_L2");
  {
    Argv a({"bench", "--tunebench_timing=cudagraph", "--tunebench_cold_l2=1"});
    const auto opt = tunebench::parse_options(&a.argc, a.ptrs.data(), "default");
    EXPECT_EQ(opt.timing, "cudagraph");
    EXPECT_TRUE(opt.cold_l2);
  }
  {
    Argv a({"bench"});
    const auto opt = tunebench::parse_options(&a.argc, a.ptrs.data(), "default");
    EXPECT_EQ(opt.timing, "kernel");
    EXPECT_FALSE(opt.cold_l2);
  }
  EXPECT_EQ(error_of({"bench", "--tunebench_timing=graph"}),
            "--tunebench_timing='graph': expected kernel, cudagraph or event");
  EXPECT_EQ(error_of({"bench", "--tunebench_cold_l2=yes"}), "--tunebench_cold_l2='yes': expected 0 or 1");
  ::setenv("TUNEBENCH_COLD_L2", "2", 1);
  EXPECT_EQ(error_of({"bench"}), "TUNEBENCH_COLD_L2='2': expected 0 or 1");
  EXPECT_EQ(error_of({"bench", "--tunebench_cold_l2=0"}), "");  // the flag wins
  ::setenv("TUNEBENCH_COLD_L2", "1", 1);
  {
    Argv a({"bench"});
    EXPECT_TRUE(tunebench::parse_options(&a.argc, a.ptrs.data(), "default").cold_l2);
  }
  ::unsetenv("TUNEBENCH_COLD_L2");
}
