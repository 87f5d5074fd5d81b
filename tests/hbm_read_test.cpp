// hbm_read without a GPU: its config space, limits and bytes (the GPU test checks that it reads
// every word: gpu_timing_test.cpp).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <stdexcept>

#include "hbm_read.hpp"
#include "mxfp4_gpu.hpp"

namespace {

using tunebench::Config;
using tunebench::bench::HbmReadOp;

tunebench::Shape shape(std::int64_t m, std::int64_t n, std::int64_t k) {
  return {"read_test", "w13", m, n, k, 0, 0, std::nullopt};
}

TEST(HbmRead, ReadsTheBytesOfTheOpItMeasures) {
  const auto gemm = std::make_shared<const tunebench::bench::Mxfp4GemmOp>(false);
  const HbmReadOp read(gemm);
  for (const auto& s : {shape(1, 4096, 4096), shape(64, 1024, 512), shape(4096, 4096, 4096)}) {
    EXPECT_EQ(read.bytes(s), gemm->bytes(s));
  }
  EXPECT_EQ(read.flops(shape(1, 4096, 4096)), 0);
}

TEST(HbmRead, NoOpToMeasureIsAnError) { EXPECT_THROW(HbmReadOp(nullptr), std::invalid_argument); }

TEST(HbmRead, EveryConfigFitsAnSm90AndNoneExceedsItsThreadsPerSm) {
  const HbmReadOp read(std::make_shared<const tunebench::bench::Mxfp4GemmOp>(false));
  const auto device = tunebench::sm90_reference_device();
  const auto configs = read.config_space(tunebench::SpaceKind::kDefault);
  ASSERT_FALSE(configs.empty());
  std::set<std::string> distinct;
  for (const auto& c : configs) {
    EXPECT_TRUE(read.can_implement(c, shape(1, 4096, 4096), device)) << c.str();
    EXPECT_LE(c.get("THREADS") * c.get("BLOCKS_PER_SM"), 2048) << c.str();
    distinct.insert(c.str());
  }
  EXPECT_EQ(distinct.size(), configs.size());
  EXPECT_EQ(read.config_space(tunebench::SpaceKind::kExpanded).size(), configs.size());
  EXPECT_FALSE(
      read.can_implement(Config{{"THREADS", 1024}, {"BLOCKS_PER_SM", 4}, {"UNROLL", 2}}, shape(1, 4096, 4096), device));
  EXPECT_FALSE(
      read.can_implement(Config{{"THREADS", 2048}, {"BLOCKS_PER_SM", 1}, {"UNROLL", 2}}, shape(1, 4096, 4096), device));
  EXPECT_FALSE(
      read.can_implement(Config{{"THREADS", 100}, {"BLOCKS_PER_SM", 1}, {"UNROLL", 2}}, shape(1, 4096, 4096), device));
  EXPECT_FALSE(
      read.can_implement(Config{{"THREADS", 256}, {"BLOCKS_PER_SM", 1}, {"UNROLL", 0}}, shape(1, 4096, 4096), device));
}

}  // namespace
