#pragma once
// Kernel activity records and their attribution to timing windows: the part of kernel-level
// timing that needs no GPU, so it is tested everywhere.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tunebench {

/// One kernel execution as CUPTI reports it (CUpti_ActivityKernel10: start, end in ns of the
/// GPU timestamp clock; correlationId of the API call that launched it).
struct KernelRecord {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
};

/// Result of attributing records to windows.
struct WindowTimes {
  /// Per window, the sum of the durations (end - start) of its kernels, in ns; 0 when no valid
  /// record belongs to it. A multi-kernel op is the sum of its kernels, not the span from the
  /// first start to the last end: gaps between its kernels are launch cost, not kernel time.
  std::vector<std::int64_t> ns;
  std::vector<std::size_t> kernels;  ///< valid records per window
  std::size_t invalid = 0;       ///< records with a zero timestamp or end < start, dropped
  std::size_t duplicates = 0;    ///< records seen twice (same correlation id, start, end), dropped
  std::size_t unattributed = 0;  ///< valid records of no window (harness work, other threads)
};

/// Attributes each record to the window whose correlation ids (the API calls made on the timing
/// thread while the window was open) contain its correlation id. Windows and ids are in the
/// order they were opened; an id appears in at most one window.
WindowTimes attribute(const std::vector<KernelRecord>& records,
                      const std::vector<std::vector<std::uint32_t>>& window_ids);

}  // namespace tunebench
