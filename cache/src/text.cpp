#include "tunebench/cache/text.hpp"

namespace tunebench::cache {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void hex(std::string& out, unsigned char u) {
  out += "\\x";
  out += kHex[u >> 4];
  out += kHex[u & 0xf];
}

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), 0 when there is none. Bytes below 0x80 are not asked.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < text.size() && (b(k) & 0xc0) == 0x80; };
  const unsigned char u = b(0);
  if (u >= 0xc2 && u <= 0xdf) return cont(1) ? 2 : 0;
  if (u >= 0xe0 && u <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if ((u == 0xe0 && b(1) < 0xa0) || (u == 0xed && b(1) > 0x9f)) return 0;
    return 3;
  }
  if (u >= 0xf0 && u <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if ((u == 0xf0 && b(1) < 0x90) || (u == 0xf4 && b(1) > 0x8f)) return 0;
    return 4;
  }
  return 0;
}

}  // namespace

std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x80) {
      if (u >= 0x20 && u != 0x7f) {
        out += text[i];
      } else if (u == '\n') {
        out += "\\n";
      } else if (u == '\r') {
        out += "\\r";
      } else if (u == '\t') {
        out += "\\t";
      } else {
        hex(out, u);
      }
      ++i;
      continue;
    }
    // Well-formed UTF-8 passes, except the C1 controls (U+0080-U+009F, \xc2\x80-\xc2\x9f: CSI and
    // the like on terminals that honour them); every other byte >= 0x80 (a raw C1 byte on an
    // 8-bit terminal, malformed UTF-8) is escaped.
    const std::size_t n = utf8_length(text, i);
    if (n == 0 || (n == 2 && u == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f)) {
      hex(out, u);
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace tunebench::cache
