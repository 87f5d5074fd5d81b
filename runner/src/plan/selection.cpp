#include "plan/selection.hpp"

#include <algorithm>

namespace tunebench {

std::vector<Family> plan_families(const OpList& ops, const Settings& settings) {
  try {
    return make_families(ops, load_shape_path(settings.shapes));
  } catch (const ShapeError& e) {
    if (settings.shapes_from_env) throw ShapeError(std::string("TUNEBENCH_SHAPES: ") + e.what());
    if (settings.shapes_from_flag) throw ShapeError(std::string("--tunebench_shapes: ") + e.what());
    throw;
  }
}

std::string default_filter(const std::vector<Family>& families, bool on_gpu, const std::string& gpu_filter,
                           const std::string& cpu_filter) {
  const std::string filter = on_gpu ? gpu_filter : cpu_filter;
  if (selects_any(families, BenchmarkFilter(filter))) return filter;
  return on_gpu ? "." : "^cpu_";
}

bool selects_any(const std::vector<Family>& families, const BenchmarkFilter& filter) {
  return std::any_of(families.begin(), families.end(),
                     [&](const Family& f) { return filter.selects(reported_name(f)); });
}

std::size_t selected_gpu_families(const std::vector<Family>& families, const BenchmarkFilter& filter) {
  return static_cast<std::size_t>(std::count_if(families.begin(), families.end(), [&](const Family& f) {
    return f.op->needs_gpu() && filter.selects(reported_name(f));
  }));
}

}  // namespace tunebench
