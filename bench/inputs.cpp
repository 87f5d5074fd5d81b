#include "inputs.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace tunebench::bench {

std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed) {
  Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
  std::vector<std::uint16_t> out(count);
  for (auto& v : out) v = mxfp4::float_to_bf16(rng.uniform(-1.0f, 1.0f));
  return out;
}

mxfp4::Matrix random_mxfp4(std::int64_t rows, std::int64_t cols, std::uint64_t seed,
                           std::uint8_t scale_lo, std::uint8_t scale_hi) {
  if (rows <= 0 || cols <= 0 || cols % mxfp4::kBlock != 0 || scale_lo > scale_hi ||
      scale_hi == mxfp4::kScaleNaN) {
    throw std::invalid_argument("random_mxfp4: bad arguments " + std::to_string(rows) + " x " +
                                std::to_string(cols));
  }
  Rng rng{seed * 0x9E3779B97F4A7C15ull + 7};
  mxfp4::Matrix w{rows, cols, std::vector<std::uint8_t>(rows * cols / 2),
                  std::vector<std::uint8_t>(rows * cols / mxfp4::kBlock)};
  std::size_t i = 0;
  for (; i + 8 <= w.codes.size(); i += 8) {
    const std::uint64_t r = rng.next();
    std::memcpy(w.codes.data() + i, &r, 8);
  }
  for (; i < w.codes.size(); ++i) w.codes[i] = static_cast<std::uint8_t>(rng.next());
  for (auto& s : w.scales) s = static_cast<std::uint8_t>(scale_lo + rng.below(scale_hi - scale_lo + 1u));
  return w;
}

}  // namespace tunebench::bench
