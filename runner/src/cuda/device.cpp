#include "tunebench/device.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

namespace tunebench {

GpuProbe probe_gpus() {
  GpuProbe probe;
  const cudaError_t err = cudaGetDeviceCount(&probe.count);
  if (err != cudaSuccess) {
    probe.count = 0;
    // Without a driver the runtime says "driver version is insufficient", which misleads.
    if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(driver);
      probe.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    } else {
      probe.reason = "no NVIDIA driver (libcuda.so.1 cannot be loaded)";
    }
    cudaGetLastError();  // clear it so later CUDA calls do not report it again
  } else if (probe.count == 0) {
    probe.reason = "cudaGetDeviceCount found no device";
  }
  return probe;
}

}  // namespace tunebench
