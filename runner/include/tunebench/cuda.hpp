#pragma once
// CUDA runtime helpers for host code: the error type, a check macro, owners of streams and
// events, device memory, and what a device can do. Plain C++ over the CUDA runtime API.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tunebench {

/// A CUDA runtime call that failed. what() is one line: the call, file:line, the error name
/// and the runtime's text. sticky() is true for errors that leave the context unusable
/// (cudaErrorIllegalAddress and the like): every later call in the process fails too.
class CudaError : public std::runtime_error {
 public:
  /// `what` as described above; `code` the failed call's status.
  CudaError(const std::string& what, cudaError_t code, bool sticky)
      : std::runtime_error(what), code_(code), sticky_(sticky) {}
  /// The runtime's status of the failed call.
  cudaError_t code() const { return code_; }
  /// Whether the context is unusable from now on (see above).
  bool sticky() const { return sticky_; }

 private:
  cudaError_t code_;
  bool sticky_;
};

/// Throws CudaError for anything but cudaSuccess, after clearing the runtime's last error so a
/// non-sticky failure does not resurface in the next unrelated call.
void cuda_check(cudaError_t status, const char* call, const char* file, int line);

/// For destructors: reports a failure on stderr instead of throwing.
void cuda_check_nothrow(cudaError_t status, const char* call, const char* file, int line) noexcept;

/// Evaluates the CUDA runtime call `call` and throws CudaError (its text, file:line) if it fails.
#define TUNEBENCH_CUDA_CHECK(call) ::tunebench::cuda_check((call), #call, __FILE__, __LINE__)
/// The same, reporting on stderr instead of throwing (destructors and deleters).
#define TUNEBENCH_CUDA_CHECK_NOTHROW(call) ::tunebench::cuda_check_nothrow((call), #call, __FILE__, __LINE__)

/// Deleter of a CUDA handle: calls `Destroy` (cudaStreamDestroy, cudaFree, ...) on it, reporting
/// a failure on stderr through TUNEBENCH_CUDA_CHECK_NOTHROW; never throws, so owners can be
/// destroyed during unwinding. unique_ptr calls it only for a non-null handle.
template <auto Destroy>
struct CudaDestroy {
  template <class H>
  void operator()(H handle) const noexcept {
    TUNEBENCH_CUDA_CHECK_NOTHROW(Destroy(handle));
  }
};

/// Move-only owner of a CUDA handle `T` (a pointer type: cudaStream_t, cudaEvent_t,
/// cudaLibrary_t, void* for device memory), released with `Destroy`. Moves are noexcept and
/// leave the source null; a moved-to owner releases what it held first. Every owner type of
/// tunebench is built on it, so none writes its own move and destroy code.
template <class T, auto Destroy>
using Handle = std::unique_ptr<std::remove_pointer_t<T>, CudaDestroy<Destroy>>;

/// Move-only owner of a non-blocking cudaStream_t on the current device.
class Stream {
 public:
  /// Creates the stream (cudaStreamNonBlocking). Throws CudaError.
  Stream();
  /// The stream; null after a move.
  cudaStream_t get() const { return s_.get(); }

 private:
  Handle<cudaStream_t, cudaStreamDestroy> s_;
};

/// Move-only owner of a cudaEvent_t (timing enabled).
class Event {
 public:
  /// Creates the event (default flags: timing enabled). Throws CudaError.
  Event();
  /// The event; null after a move.
  cudaEvent_t get() const { return e_.get(); }

 private:
  Handle<cudaEvent_t, cudaEventDestroy> e_;
};

/// Move-only owner of `bytes` of device memory (cudaMalloc; never managed memory).
class DeviceBuffer {
 public:
  /// No memory: get() is null, bytes() 0.
  DeviceBuffer() = default;
  /// Allocates `bytes` (none for 0). Throws CudaError (cudaErrorMemoryAllocation when the card
  /// is full).
  explicit DeviceBuffer(std::size_t bytes);

  /// The device address; null for an empty or moved-from buffer.
  void* get() const { return p_.get(); }
  /// The device address as a `T*` (no alignment check).
  template <class T>
  T* as() const {
    return static_cast<T*>(p_.get());
  }
  /// Size in bytes; 0 for an empty or moved-from buffer.
  std::size_t bytes() const { return p_ ? bytes_ : 0; }
  /// Copies `bytes` from host memory at offset 0 (synchronous). Throws std::out_of_range when
  /// `bytes` exceeds bytes(), CudaError when the copy fails.
  void upload(const void* src, std::size_t bytes);
  /// Copies `bytes` to host memory from offset 0 (synchronous). Throws std::out_of_range when
  /// `bytes` exceeds bytes(), CudaError when the copy fails.
  void download(void* dst, std::size_t bytes) const;

 private:
  Handle<void*, cudaFree> p_;
  std::size_t bytes_ = 0;  // meaningful only while p_ holds memory (moves leave it behind)
};

/// What a device can do, for can_implement and for the context of a run.
struct DeviceInfo {
  int ordinal = -1;                ///< CUDA device ordinal, -1 for the reference description
  std::string name;                ///< e.g. "NVIDIA H200"
  std::string uuid;                ///< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it
  int cc_major = 0, cc_minor = 0;  ///< compute capability
  int sm_count = 0;                ///< streaming multiprocessors
  int max_threads_per_block = 0;
  int regs_per_block = 0;                ///< 32-bit registers per block
  std::size_t smem_per_block_optin = 0;  ///< bytes of shared memory a block may opt in to
  std::size_t l2_bytes = 0;              ///< L2 cache size in bytes
  /// "sm_90" style architecture name for NVRTC.
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

/// Reads the properties of device `ordinal`. Throws CudaError.
DeviceInfo query_device(int ordinal);

/// The limits of an H100/H200 (sm_90: 132 SMs, 227 KiB opt-in shared memory, 64 Ki registers
/// per block, 1024 threads, 60 MiB L2 on the H200), for planning and compiling where there is
/// no device, e.g. in CI.
DeviceInfo sm90_reference_device();

}  // namespace tunebench
