#pragma once
// Timers for one iteration of an op.

#include <chrono>

#include "tunebench/cuda.hpp"

namespace tunebench {

/// Host wall-clock timer (std::chrono::steady_clock) for ops that finish on the host before
/// run() returns. Not for GPU ops: it would time the launch, not the kernel.
class HostTimer {
 public:
  void start() { start_ = std::chrono::steady_clock::now(); }
  /// Time since the last start(), in nanoseconds.
  std::chrono::nanoseconds stop() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
  }

 private:
  std::chrono::steady_clock::time_point start_{};
};

/// CUDA-event timer: events recorded on `stream` around the op's launches, then a wait for the
/// stop event. It measures from the start event to the stop event on the GPU, launch gaps
/// included, so it overstates short kernels; kernel-level timing replaces it where available.
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {}
  /// Throws CudaError.
  void start();
  /// Waits for the stream to reach the stop event; time between the events. Throws CudaError.
  std::chrono::nanoseconds stop();

 private:
  cudaStream_t stream_;
  Event start_, stop_;
};

}  // namespace tunebench
