#pragma once
// Whole-file writes that a concurrent reader, or a crash halfway, never sees torn.

#include <filesystem>
#include <string_view>

namespace tunebench {

/// Replaces `target` with `content`, whole or not at all: writes a temporary file in target's
/// folder, named "<target's name>.tmp.<pid>.<n>" (n counts this process's writes, so processes
/// and threads sharing a folder never write the same temporary file), flushes it and renames it
/// onto `target` (atomic on POSIX: a reader opens the old file or the whole new one). Throws
/// std::runtime_error naming `target` when the temporary file cannot be written (e.g. the folder
/// is missing) or renamed; no temporary file is left behind then.
void write_file_atomically(const std::filesystem::path& target, std::string_view content);

}  // namespace tunebench
