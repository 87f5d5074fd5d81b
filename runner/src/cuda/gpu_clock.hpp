#pragma once
// The SM clock of a CUDA device, read through NVML (the driver's management library, loaded at
// run time so that tunebench builds and runs where it is absent, as in CI).

#include <optional>
#include <string>

namespace tunebench {

/// A reading of the SM clock (nvmlDeviceGetClockInfo(NVML_CLOCK_SM)), in MHz.
struct SmClock {
  std::optional<unsigned> mhz;  ///< empty when it could not be read
  std::string error;            ///< why not (one line), when empty
};

/// The current SM clock of CUDA device `ordinal` (as the CUDA runtime numbers it under the
/// process's CUDA_VISIBLE_DEVICES; matched to NVML's device by PCI bus id). Never throws: a
/// machine without libnvidia-ml.so.1, or a device NVML does not know, gives an empty reading
/// with the reason.
SmClock read_sm_clock(int ordinal);

}  // namespace tunebench
