#pragma once
// For tests: where the shipped shape sets are. Tests may read the environment (they are not the
// runner), so a build moved to another machine finds them through TUNEBENCH_SHAPES as bench does.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "tunebench/shape.hpp"

namespace tunebench::testing {

/// The shape folder a test reads: `env_shapes` (TUNEBENCH_SHAPES) when set and not empty, else
/// the first runs/shape folder in the folders above `exe` (a build inside its source tree, or
/// a copied build beside its runs/), else `compiled_in` (the source tree's path at build time).
inline std::filesystem::path shape_dir_for(const char* env_shapes, const std::filesystem::path& exe,
                                           const std::filesystem::path& compiled_in) {
  if (env_shapes && *env_shapes) return env_shapes;
  std::error_code ec;
  for (auto dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::is_directory(dir / "runs" / "shape", ec)) return dir / "runs" / "shape";
    if (dir == dir.parent_path()) break;
  }
  return compiled_in;
}

/// shape_dir_for this process: TUNEBENCH_SHAPES, this test binary (/proc/self/exe), then
/// TUNEBENCH_SHAPE_DIR as compiled in (tests/CMakeLists.txt).
inline std::filesystem::path shipped_shape_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return shape_dir_for(std::getenv("TUNEBENCH_SHAPES"), ec ? std::filesystem::path() : exe, TUNEBENCH_SHAPE_DIR);
}

/// A decode (M = 8) and a prefill (M = 512) shape of each shipped set, both GEMMs: what the GPU
/// correctness tests check every op on. Throws what load_shape_path throws.
inline std::vector<Shape> decode_and_prefill_shapes() {
  std::vector<Shape> out;
  for (const auto& set : load_shape_path(shipped_shape_dir())) {
    const std::int64_t m = set.name.find("prefill") != std::string::npos ? 512 : 8;
    for (const auto& s : set.shapes) {
      if (s.m == m) out.push_back(s);
    }
  }
  return out;
}

}  // namespace tunebench::testing
