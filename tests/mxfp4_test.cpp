#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "mxfp4.hpp"

namespace mx = tunebench::mxfp4;

// OCP Microscaling Formats v1.0, section 5.3.3: every E2M1 code.
TEST(Mxfp4, E2M1TableIsTheOcpTable) {
  const float expect[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int c = 0; c < 16; ++c) {
    const float v = mx::e2m1_to_float(static_cast<std::uint8_t>(c));
    EXPECT_EQ(v, expect[c]) << "code " << c;
    EXPECT_EQ(std::signbit(v), c >= 8) << "code " << c;
    EXPECT_EQ(mx::float_to_e2m1(v), c) << "code " << c << " does not round-trip";
  }
}

TEST(Mxfp4, E2M1RoundsToNearestTiesToEvenAndSaturates) {
  struct Case {
    float x;
    std::uint8_t code;
  };
  const Case cases[] = {{0.25f, 0},  {0.26f, 1},    {0.75f, 2},    {1.25f, 2}, {1.75f, 4}, {2.5f, 4},
                        {3.5f, 6},   {5.0f, 6},     {5.1f, 7},     {7.0f, 7},  {1e30f, 7}, {-0.1f, 8},
                        {-2.5f, 12}, {-100.0f, 15}, {INFINITY, 7}, {NAN, 0}};
  for (const auto& c : cases) EXPECT_EQ(mx::float_to_e2m1(c.x), c.code) << c.x;
}

// OCP MX v1.0 section 5.4.1: E8M0 is 2^(s-127), 0xFF is NaN, no zero.
TEST(Mxfp4, E8M0TableAndNaN) {
  EXPECT_EQ(mx::e8m0_to_float(127), 1.0f);
  EXPECT_EQ(mx::e8m0_to_float(128), 2.0f);
  EXPECT_EQ(mx::e8m0_to_float(126), 0.5f);
  EXPECT_EQ(mx::e8m0_to_float(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(mx::e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_GT(mx::e8m0_to_float(0), 0.0f);
  EXPECT_TRUE(std::isnan(mx::e8m0_to_float(0xFF)));
  for (int s = 0; s < 255; ++s) {
    EXPECT_EQ(mx::e8m0_to_float(static_cast<std::uint8_t>(s)), std::ldexp(1.0f, s - 127));
  }
}

TEST(Mxfp4, ScaleIsFloorLog2OfAmaxMinusTwo) {
  EXPECT_EQ(mx::scale_for_amax(6.0f), 127);  // 6 = 1.5 * 2^2: scale 1, 6 -> code 7
  EXPECT_EQ(mx::scale_for_amax(4.0f), 127);
  EXPECT_EQ(mx::scale_for_amax(3.99f), 126);
  EXPECT_EQ(mx::scale_for_amax(1.0f), 125);
  EXPECT_EQ(mx::scale_for_amax(0.0f), 0);
  EXPECT_EQ(mx::scale_for_amax(1e-45f), 0);  // clamped below
  EXPECT_EQ(mx::scale_for_amax(3e38f), 252);
  EXPECT_EQ(mx::scale_for_amax(NAN), mx::kScaleNaN);
  EXPECT_EQ(mx::scale_for_amax(INFINITY), mx::kScaleNaN);
}

TEST(Mxfp4, QuantizePacksLowNibbleFirstWithOneScalePer32) {
  std::vector<float> row(64, 0.0f);
  row[0] = 0.5f;                                                    // code 1 at scale 1 (amax 6 in block 0)
  row[1] = -6.0f;                                                   // code 15
  row[31] = 3.0f;                                                   // code 5
  for (int i = 32; i < 64; ++i) row[i] = 0.25f * (i % 2 ? -1 : 1);  // amax 0.25: scale 2^-4
  const auto w = mx::quantize(row.data(), 1, 64);
  ASSERT_EQ(w.codes.size(), 32u);
  ASSERT_EQ(w.scales.size(), 2u);
  EXPECT_EQ(w.scales[0], 127);
  EXPECT_EQ(w.codes[0], 0xF1);
  EXPECT_EQ(w.codes[15], 0x50);
  EXPECT_EQ(w.scales[1], 127 - 4);
  EXPECT_EQ(w.codes[16], 0xE6);  // +0.25 / 2^-4 = 4 (code 6), then -4 (code 14)
}

TEST(Mxfp4, DequantizeOfQuantizeIsExactForRepresentableBlocks) {
  // Any block whose values are e2m1 codes times one power of two, with the block's amax a code
  // in [4, 6], quantizes to exactly those codes and that scale and comes back bit for bit.
  std::vector<float> src(4 * 64);
  for (std::size_t i = 0; i < src.size(); ++i) {
    const int block = static_cast<int>(i / 32);
    const float scale = std::ldexp(1.0f, block * 9 - 30);
    const int code = (i % 32 == 0) ? 7 : static_cast<int>((i * 7 + 3) % 16);
    src[i] = scale * mx::e2m1_to_float(static_cast<std::uint8_t>(code));
  }
  const auto w = mx::quantize(src.data(), 4, 64);
  std::vector<float> back(src.size());
  mx::dequantize(w, 0, 4, 0, 64, back.data(), 64);
  for (std::size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(back[i], src[i]) << i;
    EXPECT_EQ(std::signbit(back[i]), std::signbit(src[i])) << i;
  }
  // And codes/scales round-trip: quantize(dequantize(w)) == w.
  const auto again = mx::quantize(back.data(), 4, 64);
  EXPECT_EQ(again.codes, w.codes);
  EXPECT_EQ(again.scales, w.scales);
}

TEST(Mxfp4, NaNInABlockGivesTheNaNScaleAndOnlyThatBlockDequantizesToNaN) {
  std::vector<float> row(64, 1.0f);
  row[40] = NAN;
  const auto w = mx::quantize(row.data(), 1, 64);
  EXPECT_EQ(w.scales[0], 125);
  EXPECT_EQ(w.scales[1], mx::kScaleNaN);
  std::vector<float> back(64);
  mx::dequantize(w, 0, 1, 0, 64, back.data(), 64);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(back[i], 1.0f);
  for (int i = 32; i < 64; ++i) EXPECT_TRUE(std::isnan(back[i])) << i;
}

TEST(Mxfp4, QuantizeErrorIsBoundedByHalfAStep) {
  // Relative to the block scale, E2M1's widest step is 2 (between 4 and 6): error <= 1 * scale.
  std::vector<float> src(32);
  for (int i = 0; i < 32; ++i) src[i] = std::sin(0.37f * i) * 5.3f;
  const auto w = mx::quantize(src.data(), 1, 32);
  std::vector<float> back(32);
  mx::dequantize(w, 0, 1, 0, 32, back.data(), 32);
  const float scale = mx::e8m0_to_float(w.scales[0]);
  for (int i = 0; i < 32; ++i) EXPECT_LE(std::fabs(back[i] - src[i]), scale) << i;
}

TEST(Mxfp4, SubBlockDequantizeMatchesWhole) {
  std::vector<float> src(3 * 128);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::cos(0.1f * static_cast<float>(i)) * (1 + i % 7);
  const auto w = mx::quantize(src.data(), 3, 128);
  std::vector<float> whole(3 * 128), part(2 * 64);
  mx::dequantize(w, 0, 3, 0, 128, whole.data(), 128);
  mx::dequantize(w, 1, 2, 32, 64, part.data(), 64);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 64; ++c) {
      EXPECT_EQ(part[r * 64 + c], whole[(r + 1) * 128 + 32 + c]);
    }
  }
  EXPECT_THROW(mx::quantize(src.data(), 1, 100), std::invalid_argument);
}

TEST(Bf16, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(mx::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(mx::float_to_bf16(-2.0f), 0xC000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even gives 1.
  EXPECT_EQ(mx::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(mx::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(mx::float_to_bf16(INFINITY), 0x7F80);
  EXPECT_TRUE(std::isnan(mx::bf16_to_float(mx::float_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(mx::bf16_to_float(mx::float_to_bf16(-NAN))));
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = mx::bf16_to_float(static_cast<std::uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(mx::float_to_bf16(f), b);
    }
  }
}
