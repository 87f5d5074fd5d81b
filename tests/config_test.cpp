#include <gtest/gtest.h>

#include "tunebench/config.hpp"

using tunebench::Config;
using tunebench::ConfigError;

TEST(Config, StrAndParseRoundTrip) {
  const Config c{{"BLOCK_N", 64}, {"BLOCK_K", 256}, {"SPLIT_K", -1}};
  EXPECT_EQ(c.str(), "BLOCK_N=64,BLOCK_K=256,SPLIT_K=-1");
  EXPECT_EQ(Config::parse(c.str()), c);
  EXPECT_EQ(Config::parse(c.str()).str(), c.str());  // the text is made by parse too
  EXPECT_EQ(c.get("BLOCK_K"), 256);
  EXPECT_TRUE(c.has("SPLIT_K"));
  EXPECT_FALSE(c.has("BLOCK_M"));
  EXPECT_FALSE(c.has("BLOCK"));
  EXPECT_TRUE(Config::parse("").empty());
}

TEST(Config, RejectsBadTextAndNames) {
  for (const char* bad : {"BLOCK_N", "BLOCK_N=", "BLOCK_N=6x", "=4", "A=1,", "A=1,A=2", "A B=1", "A=1,,B=2"}) {
    EXPECT_THROW(Config::parse(bad), ConfigError) << bad;
  }
  EXPECT_THROW((Config{{"A", 1}, {"A", 2}}), ConfigError);
  try {
    Config{{"BLOCK_N", 1}}.get("BLOCK_M");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "config 'BLOCK_N=1' has no parameter 'BLOCK_M'");
  }
}

TEST(Config, CartesianProductVariesLastAxisFastest) {
  const auto space = tunebench::cartesian_product({{"A", {1, 2}}, {"B", {10, 20, 30}}});
  ASSERT_EQ(space.size(), 6u);
  EXPECT_EQ(space[0].str(), "A=1,B=10");
  EXPECT_EQ(space[1].str(), "A=1,B=20");
  EXPECT_EQ(space[5].str(), "A=2,B=30");
  EXPECT_EQ(tunebench::cartesian_product({}).size(), 1u);
  EXPECT_TRUE(tunebench::cartesian_product({{"A", {}}}).empty());
}
