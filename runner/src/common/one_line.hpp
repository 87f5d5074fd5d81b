#pragma once
// Messages that must stay one line whatever they quote (a name, a path, a value).

#include <string>
#include <string_view>

namespace tunebench {

/// `text` with every control character (below 0x20, and 0x7f) escaped: newline, carriage
/// return and tab as \n, \r, \t, the others as \xHH (e.g. \x1b), so a quoted name or path can
/// neither break a one-line message nor send the terminal an escape sequence. Other bytes,
/// UTF-8 included, are kept.
std::string escape_controls(std::string_view text);

}  // namespace tunebench
