#pragma once
// MXFP4 (OCP Microscaling Formats v1.0, section 5 and 6.3) and BF16 on the host: the format the
// GPU kernels read and the reference they are checked against.
//
// Layout of an MXFP4 matrix W[rows, cols] (cols a multiple of 32), row-major:
//   codes:  [rows, cols/2] bytes, element 2i in the low nibble of byte i, 2i+1 in the high one;
//   scales: [rows, cols/32] E8M0 bytes, one per 32 consecutive elements of a row (along K).

#include <cstdint>
#include <vector>

#include "tunebench/shape.hpp"

namespace tunebench::mxfp4 {

/// Elements per scale block: one E8M0 scale per 32 E2M1 elements along K (OCP MX v1.0
/// section 5, block size 32). The runner knows no formats; the ops state it (shape_rules).
inline constexpr int kBlock = 32;

/// What an op with MXFP4 weights W[N, K] needs of a shape (Op::shape_rules): K a multiple of
/// kBlock, the reason reading "the MXFP4 block size" (so a bad file stops bench with
/// "K=100 is not a multiple of 32 (the MXFP4 block size)"), and the MoE geometry when
/// `needs_moe` (a routed op).
inline ShapeRules shape_rules(bool needs_moe = false) {
  ShapeRules rules;
  rules.k_multiple = kBlock;
  rules.k_reason = "the MXFP4 block size";
  rules.needs_moe = needs_moe;
  return rules;
}

/// E8M0 code meaning NaN (OCP MX v1.0 table 7). E8M0 has no zero and no infinity.
inline constexpr std::uint8_t kScaleNaN = 0xFF;

/// The value of an E2M1 code (low 4 bits of `code`: sign, 2 exponent bits with bias 1, 1
/// mantissa bit): codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 their negatives
/// (8 is -0). OCP MX v1.0 section 5.3.3.
float e2m1_to_float(std::uint8_t code);

/// The E2M1 code nearest to x, ties to the even code (mantissa bit 0), saturating to +-6.
/// The sign is kept, so negatives that round to zero give -0 (code 8). NaN gives code 0: a
/// block holding NaN is marked by its scale instead.
std::uint8_t float_to_e2m1(float x);

/// The value of an E8M0 scale: 2^(s-127) for s in 0..254 (2^-127 is a float subnormal), NaN for
/// 0xFF. OCP MX v1.0 section 5.4.1.
float e8m0_to_float(std::uint8_t s);

/// The shared scale exponent OCP MX v1.0 section 6.3 picks for a block: floor(log2(amax)) - 2
/// (2 is E2M1's largest exponent), biased by 127 and clamped to 0..254. amax 0 gives 0
/// (2^-127); a NaN or infinite amax gives kScaleNaN.
std::uint8_t scale_for_amax(float amax);

/// A row-major MXFP4 matrix (see the layout above).
struct Matrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;             ///< a multiple of 32
  std::vector<std::uint8_t> codes;   ///< rows * cols / 2 bytes
  std::vector<std::uint8_t> scales;  ///< rows * cols / 32 bytes
};

/// Quantizes src[rows, cols] (row-major float) block by block: scale from scale_for_amax, each
/// element float_to_e2m1(x / scale) (exact division by a power of two). Throws
/// std::invalid_argument if cols is not a positive multiple of 32 or rows is not positive.
Matrix quantize(const float* src, std::int64_t rows, std::int64_t cols);

/// dst[r, c] = e8m0_to_float(scale) * e2m1_to_float(code) for rows [row0, row0 + nrows) and
/// columns [col0, col0 + ncols) (col0 and ncols multiples of 32), written row-major with
/// leading dimension ld. Every product is exact in float and in BF16.
void dequantize(const Matrix& w, std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols,
                float* dst, std::int64_t ld);

/// BF16 bits of x, rounded to nearest even; NaN stays a (quiet) NaN with its sign.
std::uint16_t float_to_bf16(float x);
/// The float whose top 16 bits are `b` (exact).
float bf16_to_float(std::uint16_t b);

}  // namespace tunebench::mxfp4
