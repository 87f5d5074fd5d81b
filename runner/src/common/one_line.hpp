#pragma once
// Messages that must stay one line whatever they quote (a name, a path, a value).

#include "tunebench/cache/text.hpp"

namespace tunebench {

/// cache::escape_controls (tunebench/cache/text.hpp): every control character and every byte of
/// malformed UTF-8 escaped, so a quoted name or path can neither break a one-line message nor
/// send the terminal an escape sequence. One rule for bench's messages and the cache tool's
/// output, kept in cache/, the lowest of the two.
using cache::escape_controls;

}  // namespace tunebench
