#include "inputs.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tunebench::bench {

std::vector<std::uint16_t> random_bf16(std::size_t count, std::uint64_t seed) {
  const std::uint64_t start = seed * 0x2545F4914F6CDD1Dull + 1;
  std::vector<std::uint16_t> out(count);
  // Value i is the (i+1)-th output of Rng{start}: splitmix64's state only ever advances by its
  // constant, so a chunk's generator starts where one sequential generator would be, and the
  // values are the same on any number of threads (prefill activations are hundreds of MB).
  constexpr std::int64_t kChunk = 1 << 20;
  const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < (n + kChunk - 1) / kChunk; ++c) {
    Rng rng{start + static_cast<std::uint64_t>(c * kChunk) * 0x9E3779B97F4A7C15ull};
    const std::int64_t end = std::min(n, (c + 1) * kChunk);
    for (std::int64_t i = c * kChunk; i < end; ++i) {
      out[static_cast<std::size_t>(i)] = mxfp4::float_to_bf16(rng.uniform(-1.0f, 1.0f));
    }
  }
  return out;
}

void check_random_mxfp4_args(std::int64_t rows, std::int64_t cols, std::uint8_t scale_lo, std::uint8_t scale_hi) {
  if (rows <= 0 || cols <= 0 || cols % mxfp4::kBlock != 0 || scale_lo > scale_hi || scale_hi == mxfp4::kScaleNaN) {
    throw std::invalid_argument("random_mxfp4: bad arguments " + std::to_string(rows) + " x " + std::to_string(cols));
  }
}

mxfp4::Matrix random_mxfp4(std::int64_t rows, std::int64_t cols, std::uint64_t seed, std::uint8_t scale_lo,
                           std::uint8_t scale_hi) {
  check_random_mxfp4_args(rows, cols, scale_lo, scale_hi);
  mxfp4::Matrix w{rows, cols, std::vector<std::uint8_t>(rows * cols / 2),
                  std::vector<std::uint8_t>(rows * cols / mxfp4::kBlock)};
  // Chunks of 1 MiB, each from its own generator seeded by (seed, chunk): the same bytes on
  // any number of threads, and gigabytes of expert weights in well under a second on many cores.
  constexpr std::int64_t kChunk = 1 << 20;
  const auto chunk_rng = [seed](std::uint64_t stream, std::int64_t chunk) {
    Rng seeder{seed * 0x9E3779B97F4A7C15ull + 7 + (stream << 40) + static_cast<std::uint64_t>(chunk)};
    return Rng{seeder.next()};
  };
  const auto codes = static_cast<std::int64_t>(w.codes.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < (codes + kChunk - 1) / kChunk; ++c) {
    Rng rng = chunk_rng(0, c);
    const std::int64_t end = std::min(codes, (c + 1) * kChunk);
    std::int64_t i = c * kChunk;
    for (; i + 8 <= end; i += 8) {
      const std::uint64_t r = rng.next();
      std::memcpy(w.codes.data() + i, &r, 8);
    }
    for (; i < end; ++i) w.codes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(rng.next());
  }
  const auto scales = static_cast<std::int64_t>(w.scales.size());
  const std::uint64_t span = scale_hi - scale_lo + 1u;
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < (scales + kChunk - 1) / kChunk; ++c) {
    Rng rng = chunk_rng(1, c);
    const std::int64_t end = std::min(scales, (c + 1) * kChunk);
    for (std::int64_t i = c * kChunk; i < end; ++i) {
      w.scales[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(scale_lo + rng.below(span));
    }
  }
  return w;
}

}  // namespace tunebench::bench
