#pragma once
// Timers for one iteration of an op.

#include <chrono>

namespace tunebench {

/// Host wall-clock timer (std::chrono::steady_clock) for ops that finish on the host before
/// run() returns. Not for GPU ops: it would time the launch, not the kernel.
class HostTimer {
 public:
  void start() { start_ = std::chrono::steady_clock::now(); }
  /// Time since the last start(), in nanoseconds.
  std::chrono::nanoseconds stop() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start_);
  }

 private:
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace tunebench
