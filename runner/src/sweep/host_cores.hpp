#pragma once
// The host's cores of a sweep: held by one process of the sweep at a time while it uses them
// all, a shard tuning a host (CPU) op or the compile pool compiling. Shards share those cores,
// and two shards timing host ops at once measured 9-16 ms against 1.15 ms for the same key. An
// exclusive flock on a file in the sweep's scratch folder, which the kernel releases when its
// holder exits or is killed, so a crashed or hung shard frees it.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace tunebench {

/// The lock file of the sweep whose scratch folder is `dir`, shared by its shards and its
/// compile pool.
inline std::filesystem::path host_cores_file(const std::filesystem::path& dir) { return dir / "host-cores.lock"; }

/// One process's handle on the host's cores (host_cores_file). Not copyable.
class HostCores {
 public:
  /// Opens (creates) `file`. Throws std::runtime_error naming it when it cannot.
  explicit HostCores(const std::filesystem::path& file) : fd_(open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ < 0) throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
  }
  ~HostCores() {
    if (fd_ >= 0) close(fd_);
  }
  HostCores(const HostCores&) = delete;
  HostCores& operator=(const HostCores&) = delete;
  /// Held until this goes; empty (none()): not held.
  using Held = std::unique_ptr<HostCores, void (*)(HostCores*)>;
  static Held none() { return {nullptr, release}; }
  /// Blocks until no other holder has them; `on_wait` is called once, before blocking, when one
  /// does.
  Held hold(const std::function<void()>& on_wait) {
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      on_wait();
      while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
    return {this, release};
  }
  /// Takes them when no other holder has them; empty when one does.
  Held try_hold() { return {flock(fd_, LOCK_EX | LOCK_NB) == 0 ? this : nullptr, release}; }

 private:
  static void release(HostCores* h) { flock(h->fd_, LOCK_UN); }
  int fd_ = -1;
};

}  // namespace tunebench
