// bench: Google Benchmark over the trace shape sets of runs/shape for every built-in op.

#include <exception>
#include <filesystem>
#include <iostream>

#include "ops.hpp"
#include "tunebench/main.hpp"

namespace {

// The source tree's runs/shape when run from a build tree, else the installed copy.
std::filesystem::path default_shapes() {
  const std::filesystem::path source = TUNEBENCH_SOURCE_SHAPES;
  return std::filesystem::exists(source) ? source : std::filesystem::path(TUNEBENCH_INSTALLED_SHAPES);
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
  return tunebench::run_benchmarks(argc, argv, ops, default_shapes(), "^mxfp4_",
                                   "^cpu_mxfp4_gemm/dsv4f_decode_");
}
