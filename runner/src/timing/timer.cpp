#include "timing/timer.hpp"

namespace tunebench {

void EventTimer::start() { TUNEBENCH_CUDA_CHECK(cudaEventRecord(start_.get(), stream_)); }

std::chrono::nanoseconds EventTimer::stop() {
  TUNEBENCH_CUDA_CHECK(cudaEventRecord(stop_.get(), stream_));
  TUNEBENCH_CUDA_CHECK(cudaEventSynchronize(stop_.get()));
  float ms = 0;
  TUNEBENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return std::chrono::nanoseconds(static_cast<long long>(static_cast<double>(ms) * 1e6));
}

}  // namespace tunebench
