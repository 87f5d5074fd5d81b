#pragma once
// How tunebench-cache prints what a cache holds: any stored text on one line, numbers the C way.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tunebench::cache {

/// `text` with every control character escaped: \n, \r, \t, other C0 controls and DEL as \xHH,
/// the C1 controls (U+0080-U+009F) and bytes of malformed UTF-8 as \xHH; well-formed UTF-8 is
/// kept. A stored name can then neither break a line nor send the terminal an escape sequence.
/// (bench's messages follow the same rule, runner/src/common/one_line.hpp; cache/ cannot use it.)
std::string escape_controls(std::string_view text);

/// Whether `text` is well-formed UTF-8 (RFC 3629), which JSON requires of its strings.
bool valid_utf8(std::string_view text);

/// Nanoseconds as microseconds with two decimals and a point ("2066.82"), whatever the locale;
/// "-" when absent. Rounded half away from zero.
std::string us_text(const std::optional<std::int64_t>& ns);

}  // namespace tunebench::cache
