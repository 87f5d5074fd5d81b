#pragma once
// Where the JIT caches' default folder comes from when the entry point has not set it: cuda/
// reads no settings, so the settings table hands it its resolver (settings.cpp, at start-up).

#include <filesystem>
#include <functional>

namespace tunebench {

/// Sets what kernel_cache_dir_or_none() (tunebench/nvrtc.hpp) asks, when it is called and
/// set_kernel_cache_dir never was, for the folder: the settings table's resolution of
/// TUNEBENCH_KERNEL_CACHE (default_kernel_cache_dir). It may throw; that is taken as "no folder".
/// Thread-safe.
void set_kernel_cache_dir_resolver(std::function<std::filesystem::path()> resolve);

}  // namespace tunebench
