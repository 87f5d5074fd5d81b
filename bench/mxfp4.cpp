#include "mxfp4.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace tunebench::mxfp4 {
namespace {

constexpr float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

}  // namespace

float e2m1_to_float(std::uint8_t code) {
  const float v = kE2M1[code & 0x7];
  return (code & 0x8) ? -v : v;
}

std::uint8_t float_to_e2m1(float x) {
  if (std::isnan(x)) return 0;
  const std::uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  if (a >= 6.0f) return sign | 7;
  std::uint8_t best = 0;
  for (std::uint8_t c = 1; c < 8; ++c) {
    const float d_best = std::fabs(a - kE2M1[best]);
    const float d = std::fabs(a - kE2M1[c]);
    // Candidates ascend, so on a tie the lower code wins unless it is odd (ties to even).
    if (d < d_best || (d == d_best && (best & 1))) best = c;
  }
  return sign | best;
}

float e8m0_to_float(std::uint8_t s) {
  if (s == kScaleNaN) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(s) - 127);
}

std::uint8_t scale_for_amax(float amax) {
  if (std::isnan(amax) || std::isinf(amax)) return kScaleNaN;
  if (amax == 0.0f) return 0;
  // ilogb is floor(log2(|x|)) exactly, subnormals included.
  const int e = std::ilogb(amax) - 2 + 127;
  return static_cast<std::uint8_t>(e < 0 ? 0 : (e > 254 ? 254 : e));
}

Matrix quantize(const float* src, std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0 || cols % kBlock != 0) {
    throw std::invalid_argument("mxfp4::quantize: expected rows > 0 and cols a positive multiple of 32, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  }
  Matrix w{rows, cols, std::vector<std::uint8_t>(rows * cols / 2), std::vector<std::uint8_t>(rows * cols / kBlock)};
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t b = 0; b < cols / kBlock; ++b) {
      const float* x = src + r * cols + b * kBlock;
      float amax = 0.0f;
      for (int i = 0; i < kBlock; ++i) {
        amax = std::isnan(x[i]) || std::isnan(amax) ? std::numeric_limits<float>::quiet_NaN()
                                                    : std::fmax(amax, std::fabs(x[i]));
      }
      const std::uint8_t s = scale_for_amax(amax);
      w.scales[r * (cols / kBlock) + b] = s;
      std::uint8_t* out = w.codes.data() + (r * cols + b * kBlock) / 2;
      for (int i = 0; i < kBlock; i += 2) {
        std::uint8_t lo = 0, hi = 0;
        if (s != kScaleNaN) {
          // Division by a power of two is exact unless it lands below float's subnormals,
          // where the value is far under E2M1's smallest step anyway.
          const float inv = std::ldexp(1.0f, 127 - static_cast<int>(s));
          lo = float_to_e2m1(x[i] * inv);
          hi = float_to_e2m1(x[i + 1] * inv);
        }
        out[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
    }
  }
  return w;
}

void dequantize(const Matrix& w, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                float* dst, std::int64_t ld) {
  float lut[16];
  for (int c = 0; c < 16; ++c) lut[c] = e2m1_to_float(static_cast<std::uint8_t>(c));
  const std::int64_t blocks_per_row = w.cols / kBlock;
  for (std::int64_t r = 0; r < nrows; ++r) {
    const std::int64_t row = row0 + r;
    const std::uint8_t* codes = w.codes.data() + (row * w.cols + col0) / 2;
    const std::uint8_t* scales = w.scales.data() + row * blocks_per_row + col0 / kBlock;
    float* out = dst + r * ld;
    for (std::int64_t b = 0; b < ncols / kBlock; ++b) {
      const float s = e8m0_to_float(scales[b]);
      for (int i = 0; i < kBlock / 2; ++i) {
        const std::uint8_t byte = codes[b * kBlock / 2 + i];
        out[b * kBlock + 2 * i] = s * lut[byte & 0xF];
        out[b * kBlock + 2 * i + 1] = s * lut[byte >> 4];
      }
    }
  }
}

std::uint16_t float_to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x0040);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace tunebench::mxfp4
