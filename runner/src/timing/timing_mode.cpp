#include "timing/timing_mode.hpp"

namespace tunebench {

const std::vector<TimingModeName>& timing_mode_names() {
  static const std::vector<TimingModeName> names = {
      {TimingMode::kKernel, "kernel"}, {TimingMode::kCudaGraph, "cudagraph"}, {TimingMode::kEvent, "event"}};
  return names;
}

const char* to_string(TimingMode mode) {
  for (const auto& n : timing_mode_names()) {
    if (n.mode == mode) return n.name;
  }
  return "unknown";
}

std::optional<TimingMode> parse_timing_mode(std::string_view name) {
  for (const auto& n : timing_mode_names()) {
    if (name == n.name) return n.mode;
  }
  return std::nullopt;
}

std::string timing_mode_choices() {
  const auto& names = timing_mode_names();
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    out += names[i].name;
  }
  return out;
}

bool uses_cupti(TimingMode mode) { return mode != TimingMode::kEvent; }

}  // namespace tunebench
