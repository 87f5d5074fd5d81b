#pragma once
// Deterministic random inputs shared by every op, identical on every machine.

#include <cstdint>
#include <vector>

#include "mxfp4.hpp"

namespace tunebench::bench {

/// splitmix64 (Steele, Lea, Flood 2014): a fixed, portable generator, so inputs are identical
/// on every machine (std::uniform_real_distribution is not specified bit for bit).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi) on a 2^-24 grid.
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f; }
  /// Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) { return ((next() >> 32) * n) >> 32; }
};

/// `count` BF16 values uniform in [-1, 1).
std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed);

/// A random MXFP4 matrix [rows, cols]: every E2M1 code uniform over all 16, every scale
/// uniform in [scale_lo, scale_hi] (E8M0 codes; 127 is 1.0). Valid MXFP4 without going through
/// quantize, so gigabytes of expert weights are quick to make. cols a multiple of 32.
mxfp4::Matrix random_mxfp4(std::int64_t rows, std::int64_t cols, std::uint64_t seed, std::uint8_t scale_lo,
                           std::uint8_t scale_hi);

/// Throws std::invalid_argument, as random_mxfp4 does, unless rows > 0, cols a positive multiple
/// of 32, scale_lo <= scale_hi and scale_hi not the NaN scale.
void check_random_mxfp4_args(std::int64_t rows, std::int64_t cols, std::uint8_t scale_lo, std::uint8_t scale_hi);

}  // namespace tunebench::bench
