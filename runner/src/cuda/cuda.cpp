#include "tunebench/cuda.hpp"

#include <cstdio>
#include <iostream>

namespace tunebench {
namespace {

// Errors after which the context is unusable (CUDA runtime API docs, "sticky" errors).
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

std::string describe(cudaError_t status, const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorName(status) + ": " +
         cudaGetErrorString(status);
}

}  // namespace

void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw CudaError(describe(status, call, file, line), status, is_sticky(status));
}

void cuda_check_nothrow(cudaError_t status, const char* call, const char* file, int line) noexcept {
  // At process exit the runtime may unload before static owners release: nothing is leaked.
  if (status == cudaSuccess || status == cudaErrorCudartUnloading) return;
  cudaGetLastError();
  std::cerr << "tunebench: " << describe(status, call, file, line) << "\n";
}

Stream::Stream() {
  cudaStream_t s = nullptr;
  TUNEBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  s_.reset(s);
}

Event::Event() {
  cudaEvent_t e = nullptr;
  TUNEBENCH_CUDA_CHECK(cudaEventCreate(&e));
  e_.reset(e);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  void* p = nullptr;
  if (bytes) TUNEBENCH_CUDA_CHECK(cudaMalloc(&p, bytes));
  p_.reset(p);
}
void DeviceBuffer::upload(const void* src, std::size_t bytes) {
  if (bytes > this->bytes()) throw std::out_of_range("DeviceBuffer::upload: more bytes than the buffer holds");
  TUNEBENCH_CUDA_CHECK(cudaMemcpy(get(), src, bytes, cudaMemcpyHostToDevice));
}
void DeviceBuffer::download(void* dst, std::size_t bytes) const {
  if (bytes > this->bytes()) throw std::out_of_range("DeviceBuffer::download: more bytes than the buffer holds");
  TUNEBENCH_CUDA_CHECK(cudaMemcpy(dst, get(), bytes, cudaMemcpyDeviceToHost));
}

DeviceInfo query_device(int ordinal) {
  cudaDeviceProp p{};
  TUNEBENCH_CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = p.name;
  char uuid[64];
  const auto* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  d.uuid = uuid;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.regs_per_block = p.regsPerBlock;
  d.smem_per_block_optin = p.sharedMemPerBlockOptin;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  return d;
}

DeviceInfo sm90_reference_device() {
  DeviceInfo d;
  d.name = "sm_90 reference (H100/H200 limits)";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.max_threads_per_block = 1024;
  d.regs_per_block = 65536;
  d.smem_per_block_optin = 232448;
  d.l2_bytes = 62914560;
  return d;
}

}  // namespace tunebench
