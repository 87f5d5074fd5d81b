#pragma once
// Whether a CUDA device can be used, and why not.

#include <string>

namespace tunebench {

/// Result of probing the CUDA runtime.
struct GpuProbe {
  int count = 0;       ///< devices visible through CUDA_VISIBLE_DEVICES, 0 when unusable
  std::string reason;  ///< when count == 0, one line saying why (the CUDA error name and text)
  bool available() const { return count > 0; }
};

/// Asks the CUDA runtime (cudaGetDeviceCount) for devices. Never throws: a missing driver, no
/// device or an empty CUDA_VISIBLE_DEVICES all give count 0 with the reason.
GpuProbe probe_gpus();

}  // namespace tunebench
