#include "cuda/gpu_clock.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>

namespace tunebench {
namespace {

// The few NVML entry points used, declared as the NVML API reference gives them (nvml.h is
// not part of every CUDA toolkit install; the library ships with the driver).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;                               // nvmlInit_v2
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;   // nvmlDeviceGetHandleByPciBusId_v2
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;  // nvmlDeviceGetClockInfo
  const char* (*error_string)(nvmlReturn_t) = nullptr;            // nvmlErrorString
  std::string failure;
};

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      n.failure = "NVML not found (libnvidia-ml.so.1)";
      return;
    }
    n.init = reinterpret_cast<decltype(n.init)>(dlsym(lib, "nvmlInit_v2"));
    n.by_pci = reinterpret_cast<decltype(n.by_pci)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<decltype(n.clock)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.error_string = reinterpret_cast<decltype(n.error_string)>(dlsym(lib, "nvmlErrorString"));
    if (!n.init || !n.by_pci || !n.clock || !n.error_string) {
      n.failure = "NVML lacks an expected entry point";
      return;
    }
    if (const nvmlReturn_t r = n.init(); r != kNvmlSuccess) n.failure = std::string("nvmlInit: ") + n.error_string(r);
  });
  return n;
}

}  // namespace

SmClock read_sm_clock(int ordinal) {
  SmClock out;
  const Nvml& n = nvml();
  if (!n.failure.empty()) {
    out.error = n.failure;
    return out;
  }
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) != cudaSuccess) {
    cudaGetLastError();
    out.error = "cudaDeviceGetPCIBusId failed for device " + std::to_string(ordinal);
    return out;
  }
  nvmlDevice_t device = nullptr;
  if (const nvmlReturn_t r = n.by_pci(bus, &device); r != kNvmlSuccess) {
    out.error = std::string("nvmlDeviceGetHandleByPciBusId(") + bus + "): " + n.error_string(r);
    return out;
  }
  unsigned mhz = 0;
  if (const nvmlReturn_t r = n.clock(device, kNvmlClockSm, &mhz); r != kNvmlSuccess) {
    out.error = std::string("nvmlDeviceGetClockInfo: ") + n.error_string(r);
    return out;
  }
  out.mhz = mhz;
  return out;
}

}  // namespace tunebench
