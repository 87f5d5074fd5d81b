#pragma once
// Reading a file a user names (a replay folder's records) that may turn out to be anything: a
// FIFO, a folder, a device.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace tunebench {

/// A file that is not a regular file, or that cannot be read. what() is one line naming the path
/// and what it is, e.g. "runs/x/configs.json: a FIFO (named pipe), expected a regular file".
class NotRegularFile : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The whole content of `file`, which must be a regular file (a symbolic link to one is
/// followed); std::nullopt when nothing is there (it, or a folder on its path, does not exist).
/// The file is opened without blocking and checked on the open descriptor, so a FIFO or a
/// terminal never hangs the caller and nothing swapped in after a check is read. Throws
/// NotRegularFile for a folder, FIFO, socket or device, or when it cannot be opened or read
/// (permission, a dangling link's loop).
std::optional<std::string> read_regular_file(const std::filesystem::path& file);

/// What `path` is, for one-line messages: "a regular file", "a folder", "a FIFO (named pipe)", "a
/// socket", "a character device", "a block device", "a symbolic link to a missing target",
/// "missing", or "unreadable (<why>)" when it cannot be looked at. A link to something is what
/// it leads to.
std::string file_kind(const std::filesystem::path& path);

/// "" when `folder` is on a file system that keeps files, else the kernel file system it is on
/// ("proc", "sysfs", "debugfs", ...): there root passes every permission check and a file still
/// cannot be made, so a check that trusts access() would pass what the run then fails on.
std::string kernel_file_system(const std::filesystem::path& folder);

}  // namespace tunebench
