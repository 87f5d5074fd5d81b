#pragma once
// Run-time compilation of CUDA kernels with NVRTC, one binary per config, cached on disk, and
// loading of the result through the CUDA runtime's library API (no link to the driver).
// JitKernelCache puts the two together for an op: each config compiled and loaded once.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tunebench/config.hpp"
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

/// A config that does not compile. what() is one line, "compile_failed: <label>: <first line of
/// the compiler log>" (without "<label>: " when the label is empty); the autotuner records it as
/// the config's error with status compile_failed. log() is NVRTC's whole log.
class CompileError : public std::runtime_error {
 public:
  /// `label` names what failed (e.g. "hbm_read"); `log` is the compiler's log.
  CompileError(const std::string& label, std::string log);
  /// The compiler's full log (every error and warning, several lines).
  const std::string& log() const noexcept { return *log_; }

 private:
  std::shared_ptr<const std::string> log_;  // shared: copying an exception must not throw
};

/// Outcome of a compilation. For KernelCompiler a config that does not compile is data, not an
/// exception (JitKernelCache turns it into a CompileError).
struct CompileResult {
  bool ok = false;          ///< whether it compiled
  std::string cubin;        ///< the binary, when ok
  std::string log;          ///< NVRTC's log (warnings when ok, errors otherwise)
  bool from_cache = false;  ///< read from the disk cache rather than compiled now
  std::string key;          ///< hex cache key (16 digits): the file is <cache_dir>/<key>.cubin
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

  /// The disk cache folder; empty when the disk cache is off.
  const std::filesystem::path& cache_dir() const { return cache_dir_; }

 private:
  std::filesystem::path cache_dir_;
};

/// One kernel's resources as ptxas reports them when "-Xptxas=-v" is among the options (NVRTC
/// then puts ptxas's info lines in the log of a successful compile).
struct KernelResources {
  std::string kernel;               ///< the entry function's name
  int registers = 0;                ///< 32-bit registers a thread
  long long spill_store_bytes = 0;  ///< bytes of register spill stores (local memory), a thread
  long long spill_load_bytes = 0;   ///< bytes of register spill loads, a thread
  long long stack_frame_bytes = 0;  ///< bytes of stack frame, a thread
  long long static_smem_bytes = 0;  ///< bytes of static shared memory, a block
};

/// The kernels of `log`, in the order ptxas compiled them: the "Compiling entry function",
/// "N bytes stack frame, N bytes spill stores, N bytes spill loads" and "Used N registers, ...,
/// N bytes smem" lines of ptxas -v (CUDA 12 and 13 print them so). Lines it does not know are
/// skipped; a log without ptxas info gives none.
std::vector<KernelResources> parse_ptxas_info(const std::string& log);

/// How many blocks of `threads_per_block` threads an sm_90 SM holds by registers alone: each
/// warp takes `registers` x 32 rounded up to the allocation unit of 256 registers, out of
/// 65,536 (CUDA Occupancy Calculator, compute capability 9.0), also capped by 64 warps and 32
/// blocks an SM. 0 when not even one block fits. Throws std::invalid_argument for registers
/// outside 1..255 or threads outside 1..1024.
int blocks_per_sm_by_registers(int registers, int threads_per_block);

/// 64-bit FNV-1a hash of `text` as 16 hex digits: the hash the kernel cache keys sources by,
/// for ops whose kernel_version() is their source.
std::string content_hash(const std::string& text);

/// The kernel cache folder: $TUNEBENCH_KERNEL_CACHE if set, else
/// $XDG_CACHE_HOME/tunebench/kernels, else $HOME/.cache/tunebench/kernels (read through the
/// runner's settings table, the one place that reads the environment).
std::filesystem::path default_kernel_cache_dir();

/// Sets the folder in which every JitKernelCache made without one keeps compiled kernels, read
/// by each when it first compiles; an empty path: none (compile every time). bench's entry point
/// (run_benchmarks) sets it from its settings before any op compiles. Thread-safe.
void set_kernel_cache_dir(std::filesystem::path dir);

/// The folder set_kernel_cache_dir set; until it is called, default_kernel_cache_dir() as of now
/// (so a test or tool may point TUNEBENCH_KERNEL_CACHE elsewhere after making its ops); an empty
/// path (KernelCompiler then compiles every time instead of failing) when no cache location can
/// be determined. Never throws.
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

/// One extern "C" kernel an op loads from a config's binary.
struct JitKernel {
  std::string name;  ///< its extern "C" name in the source
  /// Bytes of dynamic shared memory its launches use. Above 0 the kernel is opted in to that
  /// much (cudaFuncAttributeMaxDynamicSharedMemorySize) on the current device when loaded, as
  /// launches above 48 KiB require; 0 leaves the kernel's attributes alone.
  int dynamic_smem_bytes = 0;
};

/// What an op compiles for one config, and what it loads from the result.
struct JitBuild {
  CompileRequest request;          ///< the source, options (the config as -D defines) and arch
  std::vector<JitKernel> kernels;  ///< loaded in this order: JitKernels::kernel(i) is kernels[i]
};

/// An op's recipe: the build of `config` for `arch` ("sm_90"); request.arch should be `arch`.
/// Called from several threads at once by JitKernelCache::precompile, so it must only read
/// constant state. May throw (e.g. ConfigError for a config lacking a parameter).
using JitBuilder = std::function<JitBuild(const Config& config, const std::string& arch)>;

/// The loaded kernels of one config on the current device (owns the library they live in).
class JitKernels {
 public:
  /// Loads `cubin` and looks up every kernel of `kernels`, applying its dynamic shared memory
  /// for `device`. Throws CudaError (a cubin for another architecture, a kernel not in it).
  JitKernels(const std::string& cubin, const std::vector<JitKernel>& kernels, int device);

  /// Kernel `i` of the build's list, for cudaLaunchKernel. Throws std::out_of_range.
  cudaKernel_t kernel(std::size_t i) const { return kernels_.at(i); }
  /// Its dynamic shared memory in bytes, as the build gave it (the launch's smem argument).
  int dynamic_smem_bytes(std::size_t i) const { return smem_.at(i); }
  /// How many kernels were loaded.
  std::size_t size() const { return kernels_.size(); }

 private:
  KernelLibrary library_;
  std::vector<cudaKernel_t> kernels_;
  std::vector<int> smem_;
};

/// One op's JIT kernels: each config compiled (through the disk cache of KernelCompiler) and
/// loaded on first use, for the current device's architecture, and kept for the cache's
/// lifetime, so a timed run only launches. Entries are keyed by Config::str(): an op whose
/// configs share a binary (parameters read only at launch) passes them in one canonical form.
/// Thread-safe; not copyable or movable (ops hold it as a member).
class JitKernelCache {
 public:
  /// `label` names the kernels in CompileError messages; `build` is the op's recipe. The disk
  /// cache is kernel_cache_dir_or_none(), read when first needed (not here: an op is built
  /// before bench has read its settings, and building one touches no file).
  JitKernelCache(std::string label, JitBuilder build);
  /// The same with the disk cache in `cache_dir` (created when first needed; an empty path
  /// compiles every time), e.g. a test's scratch folder.
  JitKernelCache(std::string label, JitBuilder build, std::filesystem::path cache_dir);
  JitKernelCache(const JitKernelCache&) = delete;
  JitKernelCache& operator=(const JitKernelCache&) = delete;
  /// Unloads every config's kernels (errors reported on stderr, never thrown).
  ~JitKernelCache();

  /// The kernels of `config` on the current device, compiled and loaded on first use (the
  /// reference stays valid as long as the cache). Concurrent calls wait for each other. Throws
  /// CompileError when the config does not compile (not remembered: a later call compiles
  /// again), CudaError when no device is usable or loading fails, std::runtime_error when the
  /// disk cache or NVRTC fails, and whatever the builder throws.
  const JitKernels& get(const Config& config) const;

  /// Compiles `configs` for `arch` into the disk cache on up to `threads` threads (NVRTC
  /// compiles concurrently), so that get() then only loads. Loads nothing and needs no device.
  /// Skips configs already loaded or repeated; failures are left for get() to report, with the
  /// config. Does nothing when there is no disk cache to keep the results. Throws only for
  /// failures to set up (the disk cache folder cannot be created).
  void precompile(const std::vector<Config>& configs, const std::string& arch, int threads) const;

  /// Compiles `config` for `arch` (or reads it from the disk cache) without loading it; needs
  /// no device. The result has ok true. Throws as get(), CompileError included.
  CompileResult compile(const Config& config, const std::string& arch) const;

  /// The label given at construction.
  const std::string& label() const { return label_; }

 private:
  const KernelCompiler& compiler() const;  // made on first use

  std::string label_;
  JitBuilder build_;
  std::optional<std::filesystem::path> cache_dir_;  // nullopt: kernel_cache_dir_or_none()
  mutable std::mutex mutex_;
  mutable std::once_flag compiler_once_;
  mutable std::unique_ptr<KernelCompiler> compiler_;
  mutable std::map<std::string, std::unique_ptr<JitKernels>> loaded_;
};

}  // namespace tunebench
