// The kernel layout of MXFP4 weights (PackedMxfp4 in mxfp4_gpu.hpp) and its decode on the host.
#include <cstring>
#include <stdexcept>

#include "mxfp4_gpu.hpp"

namespace tunebench::bench {
namespace {

// Where element (row g + 8*(j&1), column 16w + 2t + 8*(j>>1) + h) of an atom lives: the byte
// offset of its 32-bit word (lane 4g + t, word w) and its register j and half h.
struct AtomPos {
  int word_byte;
  int j, h;
};

AtomPos atom_pos(int r, int c) {  // r in 0..15, c in 0..31
  const int g = r & 7, jr = r >> 3;
  const int w = c >> 4, cc = c & 15;
  const int jc = cc >> 3, t = (cc & 7) >> 1, h = cc & 1;
  return {(g * 4 + t) * 8 + w * 4, jr | (jc << 1), h};
}

// The kernel's left rotation of a word for bit `bit` (0 = m, 1 = e0, 2 = e1, 3 = sign) of a
// code in register j (raw_pair in bench/kernels/mxfp4_common.cuh).
int rotation(int j, int bit) {
  static constexpr int kRot[3] = {0, 4, 10};
  if (j < 3) return kRot[j];
  return bit == 2 ? 30 : 6;
}

// Bit `bit` of a code at (j, h): the bf16 bit it becomes (sign 15, e1 8, e0 7, m 6, +16 in the
// high half) rotated back.
int source_bit(int j, int h, int bit) {
  static constexpr int kTarget[4] = {6, 7, 8, 15};
  return (16 * h + kTarget[bit] - rotation(j, bit) + 32) % 32;
}

std::uint32_t load_word(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::uint8_t get_code(const std::uint8_t* atom, const AtomPos& pos) {
  const std::uint32_t word = load_word(atom + pos.word_byte);
  std::uint8_t code = 0;
  for (int bit = 0; bit < 4; ++bit)
    code |= static_cast<std::uint8_t>(((word >> source_bit(pos.j, pos.h, bit)) & 1u) << bit);
  return code;
}

void put_code(std::uint8_t* atom, const AtomPos& pos, std::uint8_t code) {
  std::uint32_t word = load_word(atom + pos.word_byte);
  for (int bit = 0; bit < 4; ++bit)
    word |= static_cast<std::uint32_t>((code >> bit) & 1) << source_bit(pos.j, pos.h, bit);
  std::memcpy(atom + pos.word_byte, &word, 4);
}

std::uint32_t rotl(std::uint32_t x, int s) { return s == 0 ? x : (x << s) | (x >> (32 - s)); }

// raw_pair of the kernel, on the host: register j of a word as a bf16 pair, each half the
// code's value times 2^-126.
std::uint32_t raw_pair(std::uint32_t q, int j) {
  switch (j) {
    case 0:
      return q & 0x81C081C0u;
    case 1:
      return rotl(q, 4) & 0x81C081C0u;
    case 2:
      return rotl(q, 10) & 0x81C081C0u;
    default:
      return (rotl(q, 6) & 0x80C080C0u) | (rotl(q, 30) & 0x01000100u);
  }
}

// What fma.rn.bf16x2 computes for these exact power-of-two products: the float product
// (exact), then rounded to bf16 (exact as well, subnormals included).
std::uint16_t bf16_mul(std::uint16_t a, std::uint16_t b) {
  return mxfp4::float_to_bf16(mxfp4::bf16_to_float(a) * mxfp4::bf16_to_float(b));
}

std::uint16_t scale_bf16(std::uint8_t s) {
  return s == 0xFF ? 0x7FC0 : (s == 0 ? 0x0040 : static_cast<std::uint16_t>(s << 7));
}

}  // namespace

PackedMxfp4 pack_for_gpu(const mxfp4::Matrix& w) {
  if (w.rows % 16 != 0 || w.cols % 32 != 0) {
    throw std::invalid_argument("pack_for_gpu: rows must be a multiple of 16 and cols of 32, got " +
                                std::to_string(w.rows) + " x " + std::to_string(w.cols));
  }
  PackedMxfp4 p{w.rows, w.cols, std::vector<std::uint8_t>(w.codes.size()), std::vector<std::uint8_t>(w.scales.size())};
  const std::int64_t atoms_per_row = w.cols / 32;
  for (std::int64_t r = 0; r < w.rows; ++r) {
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const std::uint8_t byte = w.codes[(r * w.cols + c) / 2];
      const std::uint8_t code = (c & 1) ? byte >> 4 : byte & 0xF;
      const auto pos = atom_pos(static_cast<int>(r & 15), static_cast<int>(c & 31));
      const std::int64_t atom = (r / 16) * atoms_per_row + c / 32;
      put_code(p.codes.data() + atom * 256, pos, code);
      if (c % 32 == 0) p.scales[atom * 16 + (r & 15)] = w.scales[r * atoms_per_row + c / 32];
    }
  }
  return p;
}

mxfp4::Matrix unpack_from_gpu(const std::uint8_t* codes, const std::uint8_t* scales, std::int64_t cols,
                              std::int64_t row0, std::int64_t nrows) {
  if (row0 % 16 != 0 || nrows % 16 != 0 || nrows <= 0 || cols % 32 != 0) {
    throw std::invalid_argument("unpack_from_gpu: rows must be multiples of 16 and cols of 32");
  }
  mxfp4::Matrix w{nrows, cols, std::vector<std::uint8_t>(nrows * cols / 2),
                  std::vector<std::uint8_t>(nrows * cols / 32)};
  const std::int64_t atoms_per_row = cols / 32;
  for (std::int64_t r = 0; r < nrows; ++r) {
    const std::int64_t gr = row0 + r;
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto pos = atom_pos(static_cast<int>(gr & 15), static_cast<int>(c & 31));
      const std::int64_t atom = (gr / 16) * atoms_per_row + c / 32;
      const std::uint8_t code = get_code(codes + atom * 256, pos);
      w.codes[(r * cols + c) / 2] |= static_cast<std::uint8_t>((c & 1) ? code << 4 : code);
      if (c % 32 == 0) w.scales[r * atoms_per_row + c / 32] = scales[atom * 16 + (gr & 15)];
    }
  }
  return w;
}

float kernel_decode(const PackedMxfp4& w, std::int64_t r, std::int64_t c, bool folded) {
  const auto pos = atom_pos(static_cast<int>(r & 15), static_cast<int>(c & 31));
  const std::int64_t atom = (r / 16) * (w.cols / 32) + c / 32;
  const std::uint32_t pair = raw_pair(load_word(w.codes.data() + atom * 256 + pos.word_byte), pos.j);
  const auto raw = static_cast<std::uint16_t>(pos.h ? pair >> 16 : pair & 0xFFFF);
  const std::uint8_t s = w.scales[atom * 16 + (r & 15)];
  if (folded && (s <= 128 || s == 0xFF)) {
    const std::uint16_t fold = s == 0xFF ? 0x7FC0 : static_cast<std::uint16_t>((s + 126) << 7);
    return mxfp4::bf16_to_float(bf16_mul(raw, fold));
  }
  return mxfp4::bf16_to_float(bf16_mul(bf16_mul(raw, 0x7E80), scale_bf16(s)));
}

}  // namespace tunebench::bench
