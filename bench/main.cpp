// bench: Google Benchmark over the trace shape sets of runs/shape for every built-in op.

#include <exception>
#include <filesystem>
#include <iostream>

#include "ops.hpp"
#include "tunebench/main.hpp"

namespace {

// An installed bench (PREFIX/bin/bench) reads PREFIX/share/tunebench/shape, found from its own
// location so that any --prefix works; a bench in the build tree reads the source tree's.
std::filesystem::path default_shapes() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "tunebench" / "shape";
    if (std::filesystem::is_directory(installed, ec)) return installed;
  }
  return TUNEBENCH_SOURCE_SHAPES;
}

}  // namespace

int main(int argc, char** argv) {
  // With a GPU: the GPU MXFP4 families. Without one: the CPU reference on the decode sets,
  // which a 2-core machine finishes in about a minute.
  tunebench::OpList ops;
  try {
    ops = tunebench::bench::builtin_ops();
  } catch (const std::exception& e) {
    std::cerr << "bench: " << e.what() << "\n";
    return 2;
  }
  return tunebench::run_benchmarks(argc, argv, ops, default_shapes(), "^mxfp4_", "^cpu_mxfp4_gemm/dsv4f_decode_");
}
