#pragma once
// The plan stage: shape sets read, families made, and the benchmarks --benchmark_filter selects.

#include <string>
#include <vector>

#include "plan/family.hpp"
#include "plan/filter.hpp"
#include "settings/settings.hpp"

namespace tunebench {

/// Every family of `ops` on the shape sets of settings.shapes (load_shape_path, make_families:
/// each op's shape rules are checked there). A ShapeError's message is prefixed
/// "TUNEBENCH_SHAPES: " when the path came from that variable, "--tunebench_shapes: " when it came
/// from the flag.
std::vector<Family> plan_families(const OpList& ops, const Settings& settings);

/// The filter a run without --benchmark_filter uses: `gpu_filter` on a machine with a GPU when
/// some op needs one, else `cpu_filter`; when that selects nothing (other shape sets than the
/// shipped ones), every family (GPU) or every host op ("^cpu_"). A listing is never narrowed.
std::string default_filter(const std::vector<Family>& families, bool on_gpu, const std::string& gpu_filter,
                           const std::string& cpu_filter);

/// Whether `filter` selects any of `families`.
bool selects_any(const std::vector<Family>& families, const BenchmarkFilter& filter);

/// How many selected families need a GPU.
std::size_t selected_gpu_families(const std::vector<Family>& families, const BenchmarkFilter& filter);

}  // namespace tunebench
