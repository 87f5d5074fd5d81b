#pragma once
// The thread that renews a ConfigCache object's leases while it lives (lease.hpp).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "tunebench/cache/lease.hpp"

namespace tunebench::cache::detail {

// Renews the leases of `token` in the cache at `path` every min(ttl, stalled_after) / 4, through a connection
// of its own (a ConfigCache's statements are not for two threads), and writes the holder's
// progress time with them. A renewal that fails (a lock held too long) waits for the next beat:
// a lease lapses only after four missed beats.
class Heartbeat {
 public:
  Heartbeat(std::filesystem::path path, std::string token, LeasePolicy policy);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  // Progress now; `ongoing`: count every beat as progress until the next call.
  void progress(bool ongoing);
  // Progress now, `ongoing` as it was.
  void touch() { last_progress_ms_ = unix_ms(); }
  // The progress time a renewal writes now.
  std::int64_t progress_ms() const;

 private:
  void run();

  std::filesystem::path path_;
  std::string token_;
  LeasePolicy policy_;
  std::atomic<std::int64_t> last_progress_ms_;
  std::atomic<bool> ongoing_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once every member above is ready
};

}  // namespace tunebench::cache::detail
