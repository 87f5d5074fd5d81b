#pragma once
// Stored text made safe to print, and checked before it goes into JSON, and counts in words:
// shared by bench's one-line messages and tunebench-cache's output.

#include <string>
#include <string_view>

namespace tunebench::cache {

/// `text` with every control character escaped: newline, carriage return and tab as \n, \r,
/// \t, the other C0 controls and DEL as \xHH (e.g. \x1b), and every byte of a C1 control
/// (U+0080-U+009F in UTF-8, e.g. \xc2\x9b) or of malformed UTF-8 (a raw 0x9b, \xff) as \xHH,
/// so a quoted name, path or stored config can neither break a one-line message nor send the
/// terminal an escape sequence, on a UTF-8 or an 8-bit terminal. Well-formed UTF-8 (RFC 3629)
/// is kept. Never throws but std::bad_alloc.
std::string escape_controls(std::string_view text);

/// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
/// U+10FFFF), which JSON requires of its strings.
bool valid_utf8(std::string_view text);

/// `n` and the noun, singular when n is 1: count_of(1, "key", "keys") is "1 key",
/// count_of(0, "key", "keys") "0 keys".
inline std::string count_of(long long n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

}  // namespace tunebench::cache
