#pragma once
// The bench entry point, usable by any project that registers its own ops (tests/consumer/main.cpp
// makes this very call against the installed package):
//
//     tunebench::OpList my_ops();  // the project's ops
//
//     int main(int argc, char** argv) {
//       return tunebench::run_benchmarks(argc, argv, my_ops(), "runs/shape", "^gpu_", "^cpu_");
//     }

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tunebench/op.hpp"

namespace tunebench {

/// Runs bench over `ops` (every one registered, whatever the machine): parses flags (Google
/// Benchmark's and tunebench's), loads the shape sets, registers every op x set x shape family
/// and runs those --benchmark_filter selects, each with its cached config, autotuned (and
/// cached) before its timing loop when the cache has none. `default_shapes` is the shape file
/// or folder read when neither --tunebench_shapes nor TUNEBENCH_SHAPES names one. Without
/// --benchmark_filter it selects `default_filter_gpu` when a GPU is present and some op needs
/// one, else `default_filter_cpu` (POSIX extended regexes, as --benchmark_filter). Selected GPU
/// families on a machine without a GPU are reported in one line and end with SkipWithError (a
/// failed benchmark is an entry with error_occurred in the output, as in Google Benchmark).
/// Returns the process exit status: 0 when benchmarks ran (or were listed), 1 when the filter
/// matched none, 2 on bad input (shape file, flag, environment), each failure with a one-line
/// message on stderr; an exception (std::exception) that escapes a stage is such a message
/// ("bench: <what>") with status 2.
int run_benchmarks(int argc, char** argv, const OpList& ops, const std::filesystem::path& default_shapes,
                   const std::string& default_filter_gpu, const std::string& default_filter_cpu);

}  // namespace tunebench
