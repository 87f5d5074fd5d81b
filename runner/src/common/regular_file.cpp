#include "common/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tunebench {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

std::string file_kind(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return S_ISREG(st.st_mode) ? "a regular file" : kind_of(st.st_mode);
  const int err = errno;
  if (err == ENOENT && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return "a symbolic link to a missing target";
  }
  if (err == ENOENT || err == ENOTDIR) return "missing";
  return std::string("unreadable (") + std::strerror(err) + ")";
}

std::optional<std::string> read_regular_file(const std::filesystem::path& file) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for ever.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw NotRegularFile(file.string() + ": cannot open (" + std::strerror(errno) + ")");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw NotRegularFile(file.string() + ": cannot read (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode))
    throw NotRegularFile(file.string() + ": " + kind_of(st.st_mode) + ", expected a regular file");
  std::string content;
  content.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw NotRegularFile(file.string() + ": cannot read (" + std::strerror(errno) + ")");
    }
    content.append(buffer, static_cast<std::size_t>(n));
  }
  return content;
}

std::string kernel_file_system(const std::filesystem::path& folder) {
  struct statfs fs {};
  if (::statfs(folder.c_str(), &fs) != 0) return "";
  // Magic numbers of <linux/magic.h>.
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x9fa0:
      return "proc";
    case 0x62656572:
      return "sysfs";
    case 0x64626720:
      return "debugfs";
    case 0x73636673:
      return "securityfs";
    case 0x27e0eb:
      return "cgroup";
    case 0x63677270:
      return "cgroup2";
    case 0xf97cff8c:
      return "selinuxfs";
    case 0x6e736673:
      return "nsfs";
    case 0xcafe4a11:
      return "bpf";
    default:
      return "";
  }
}

}  // namespace tunebench
