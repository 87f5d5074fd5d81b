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

namespace {

template <typename Names>
std::string choices(const Names& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    out += names[i].name;
  }
  return out;
}

}  // namespace

std::string timing_mode_choices() { return choices(timing_mode_names()); }

bool uses_cupti(TimingMode mode) { return mode != TimingMode::kEvent; }

const std::vector<TimingLoopName>& timing_loop_names() {
  static const std::vector<TimingLoopName> names = {{TimingLoop::kGraph, "graph"}, {TimingLoop::kEager, "eager"}};
  return names;
}

const char* to_string(TimingLoop loop) {
  for (const auto& n : timing_loop_names()) {
    if (n.loop == loop) return n.name;
  }
  return "unknown";
}

std::optional<TimingLoop> parse_timing_loop(std::string_view name) {
  for (const auto& n : timing_loop_names()) {
    if (name == n.name) return n.loop;
  }
  return std::nullopt;
}

std::string timing_loop_choices() { return choices(timing_loop_names()); }

const std::vector<IterationSizingName>& iteration_sizing_names() {
  static const std::vector<IterationSizingName> names = {{IterationSizing::kSized, "sized"},
                                                         {IterationSizing::kProbed, "probed"}};
  return names;
}

const char* to_string(IterationSizing sizing) {
  for (const auto& n : iteration_sizing_names()) {
    if (n.sizing == sizing) return n.name;
  }
  return "unknown";
}

std::optional<IterationSizing> parse_iteration_sizing(std::string_view name) {
  for (const auto& n : iteration_sizing_names()) {
    if (name == n.name) return n.sizing;
  }
  return std::nullopt;
}

std::string iteration_sizing_choices() { return choices(iteration_sizing_names()); }

}  // namespace tunebench
