#pragma once
// Run-time compilation of CUDA kernels with NVRTC, one binary per config, cached on disk, and
// loading of the result through the CUDA runtime's library API (no link to the driver).

#include <cuda_runtime_api.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "tunebench/cuda.hpp"

namespace tunebench {

/// What to compile. The cache key is a hash of the source, the options (which carry the config
/// as -D defines, and compile-time switches such as FOLDSCALE), the architecture and the NVRTC
/// version: change any of them and the kernel is compiled anew.
struct CompileRequest {
  std::string source;                ///< the CUDA C++ source; kernels declared extern "C"
  std::string source_name;           ///< shown in compiler messages, e.g. "mxfp4_gemm.cu"
  std::vector<std::string> options;  ///< NVRTC options besides -arch, e.g. "-DBLOCK_M=64"
  std::string arch;                  ///< a real architecture, e.g. "sm_90" (cubin output)
};

/// Outcome of a compilation. A config that does not compile is data, not an exception.
struct CompileResult {
  bool ok = false;
  std::string cubin;  ///< the binary, when ok
  std::string log;    ///< NVRTC's log (warnings when ok, errors otherwise)
  bool from_cache = false;
  std::string key;    ///< hex cache key
};

/// "major.minor" of the NVRTC library in use.
std::string nvrtc_version();

/// Compiles CUDA sources to cubins, caching them in a folder shared safely by several
/// processes: each cubin is written to a temporary file and renamed into place (atomic on
/// POSIX), and every file starts with its full key, so a hash collision or a torn foreign file
/// is detected and recompiled, never loaded.
class KernelCompiler {
 public:
  /// `cache_dir` is created if missing; an empty path disables the disk cache.
  explicit KernelCompiler(std::filesystem::path cache_dir);

  /// Compiles (or reads from the cache). Throws std::runtime_error only for failures of the
  /// machinery (NVRTC unusable, cache folder not writable); compile errors come back in the
  /// result with ok == false and the log.
  CompileResult compile(const CompileRequest& request) const;

  const std::filesystem::path& cache_dir() const { return cache_dir_; }

 private:
  std::filesystem::path cache_dir_;
};

/// 64-bit FNV-1a hash of `text` as 16 hex digits: the hash the kernel cache keys sources by,
/// for ops whose kernel_version() is their source.
std::string content_hash(const std::string& text);

/// The kernel cache folder: $TUNEBENCH_KERNEL_CACHE if set, else
/// $XDG_CACHE_HOME/tunebench/kernels, else $HOME/.cache/tunebench/kernels.
std::filesystem::path default_kernel_cache_dir();

/// default_kernel_cache_dir(), or an empty path (KernelCompiler then compiles every time
/// instead of failing) when no cache location can be determined. Never throws.
std::filesystem::path kernel_cache_dir_or_none() noexcept;

/// A loaded cubin (move-only owner of a cudaLibrary_t) on the current device.
class KernelLibrary {
 public:
  /// Loads `cubin`. Throws CudaError (e.g. a cubin for another architecture).
  explicit KernelLibrary(const std::string& cubin);

  /// The extern "C" kernel `name`; throws CudaError if absent.
  cudaKernel_t kernel(const char* name) const;

 private:
  Handle<cudaLibrary_t, cudaLibraryUnload> lib_;
};

}  // namespace tunebench
