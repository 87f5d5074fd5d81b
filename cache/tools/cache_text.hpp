#pragma once
// How tunebench-cache prints what a cache holds: any stored text on one line
// (escape_controls, tunebench/cache/text.hpp), numbers the C way.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tunebench/cache/text.hpp"

namespace tunebench::cache {

/// Nanoseconds as microseconds with two decimals and a point ("2066.82"), whatever the locale;
/// "-" when absent. Rounded half away from zero.
std::string us_text(const std::optional<std::int64_t>& ns);

}  // namespace tunebench::cache
