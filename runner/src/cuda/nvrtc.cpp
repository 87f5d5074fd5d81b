#include "tunebench/nvrtc.hpp"

#include <algorithm>
#include <cctype>

#include <nvrtc.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "cuda/kernel_cache_dir.hpp"
#include "tunebench/cuda.hpp"

namespace tunebench {
namespace {

namespace fs = std::filesystem;

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void nvrtc_check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw std::runtime_error(std::string(call) + ": " + nvrtcGetErrorString(r));
}

// The key text: everything that changes the binary. The source enters by two independent
// hashes and its length, so the text stays short while a collision stays implausible.
std::string key_text(const CompileRequest& r) {
  std::string k = "tunebench-kernel-v1\nsource " + hex(fnv1a(r.source)) + " " +
                  hex(fnv1a(r.source, 0x84222325cbf29ce4ull)) + " " + std::to_string(r.source.size()) + "\narch " +
                  r.arch + "\nnvrtc " + nvrtc_version() + "\n";
  for (const auto& o : r.options) k += "option " + o + "\n";
  return k;
}

CompileResult compile_now(const CompileRequest& r) {
  nvrtcProgram prog = nullptr;
  nvrtc_check(nvrtcCreateProgram(&prog, r.source.c_str(), r.source_name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  std::vector<std::string> opts = r.options;
  opts.push_back("-arch=" + r.arch);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult status = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());

  CompileResult out;
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(log_size - 1);
  }
  if (status == NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtc_check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.cubin.resize(size);
    nvrtc_check(nvrtcGetCUBIN(prog, out.cubin.data()), "nvrtcGetCUBIN");
    out.ok = true;
  } else if (out.log.empty()) {
    out.log = nvrtcGetErrorString(status);
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtc_check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

KernelCompiler::KernelCompiler(fs::path cache_dir) : cache_dir_(std::move(cache_dir)) {
  if (!cache_dir_.empty()) fs::create_directories(cache_dir_);
}

CompileResult KernelCompiler::compile(const CompileRequest& request) const {
  const std::string key = key_text(request);
  const std::string id = hex(fnv1a(key));
  if (cache_dir_.empty()) {
    auto out = compile_now(request);
    out.key = id;
    return out;
  }
  const fs::path file = cache_dir_ / (id + ".cubin");
  if (std::ifstream in{file, std::ios::binary}) {
    std::ostringstream data;
    data << in.rdbuf();
    const std::string bytes = data.str();
    if (bytes.size() > key.size() && bytes.compare(0, key.size(), key) == 0) {
      CompileResult hit;
      hit.ok = true;
      hit.cubin = bytes.substr(key.size());
      hit.from_cache = true;
      hit.key = id;
      return hit;
    }
  }
  CompileResult out = compile_now(request);
  out.key = id;
  if (!out.ok) return out;
  // The file starts with its full key, so a reader can tell a hash collision from a hit.
  try {
    write_file_atomically(file, key + out.cubin);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("kernel cache: ") + e.what());
  }
  return out;
}

namespace {

// The process's kernel cache folder: as its entry point set it (set_kernel_cache_dir), else what
// the settings table resolves when asked (set_kernel_cache_dir_resolver).
struct KernelCacheDir {
  std::mutex mutex;
  std::optional<fs::path> dir;
  std::function<fs::path()> resolve;
};

KernelCacheDir& kernel_cache_dir_setting() {
  static KernelCacheDir setting;
  return setting;
}

}  // namespace

void set_kernel_cache_dir(fs::path dir) {
  KernelCacheDir& s = kernel_cache_dir_setting();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.dir = std::move(dir);
}

void set_kernel_cache_dir_resolver(std::function<fs::path()> resolve) {
  KernelCacheDir& s = kernel_cache_dir_setting();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.resolve = std::move(resolve);
}

fs::path kernel_cache_dir_or_none() noexcept {
  try {
    KernelCacheDir& s = kernel_cache_dir_setting();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.dir) return *s.dir;
    return s.resolve ? s.resolve() : fs::path{};
  } catch (const std::exception&) {
    return {};
  }
}

std::string content_hash(const std::string& text) { return hex(fnv1a(text)); }

namespace {

// The number right before `unit` in `line` ("148 bytes spill stores" -> 148), or -1.
long long number_before(const std::string& line, const std::string& unit) {
  const auto at = line.find(unit);
  if (at == std::string::npos || at < 2) return -1;
  std::size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == end || end - begin > 18) return -1;
  return std::stoll(line.substr(begin, end - begin));
}

}  // namespace

std::vector<KernelResources> parse_ptxas_info(const std::string& log) {
  std::vector<KernelResources> out;
  std::size_t pos = 0;
  while (pos < log.size()) {
    const auto nl = log.find('\n', pos);
    const std::string line = log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? log.size() : nl + 1;
    const std::string entry = "Compiling entry function '";
    if (const auto at = line.find(entry); at != std::string::npos) {
      const auto name_end = line.find('\'', at + entry.size());
      if (name_end == std::string::npos) continue;
      out.push_back({line.substr(at + entry.size(), name_end - at - entry.size())});
      continue;
    }
    if (out.empty()) continue;  // info before the first entry function (gmem and the like)
    KernelResources& k = out.back();
    if (line.find("bytes spill stores") != std::string::npos) {
      k.stack_frame_bytes = std::max(0LL, number_before(line, "bytes stack frame"));
      k.spill_store_bytes = std::max(0LL, number_before(line, "bytes spill stores"));
      k.spill_load_bytes = std::max(0LL, number_before(line, "bytes spill loads"));
    } else if (const long long regs = number_before(line, "registers");
               regs >= 0 && line.find("Used ") != std::string::npos) {
      k.registers = static_cast<int>(regs);
      k.static_smem_bytes = std::max(0LL, number_before(line, "bytes smem"));
    }
  }
  return out;
}

int blocks_per_sm_by_registers(int registers, int threads_per_block) {
  if (registers < 1 || registers > 255) {
    throw std::invalid_argument("blocks_per_sm_by_registers: " + std::to_string(registers) +
                                " registers: expected 1 to 255 a thread");
  }
  if (threads_per_block < 1 || threads_per_block > 1024) {
    throw std::invalid_argument("blocks_per_sm_by_registers: " + std::to_string(threads_per_block) +
                                " threads: expected 1 to 1024 a block");
  }
  const int warps = (threads_per_block + 31) / 32;
  const int per_warp = (registers * 32 + 255) / 256 * 256;
  const int warps_by_registers = std::min(65536 / per_warp, 64);
  return std::min(warps_by_registers / warps, 32);
}

KernelLibrary::KernelLibrary(const std::string& cubin) {
  cudaLibrary_t lib = nullptr;
  TUNEBENCH_CUDA_CHECK(cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  lib_.reset(lib);
}

cudaKernel_t KernelLibrary::kernel(const char* name) const {
  cudaKernel_t k = nullptr;
  TUNEBENCH_CUDA_CHECK(cudaLibraryGetKernel(&k, lib_.get(), name));
  return k;
}

}  // namespace tunebench
