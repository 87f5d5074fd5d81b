#include "timing/timing_mode.hpp"

namespace tunebench {

namespace {

template <class E>
const char* name_in(const std::vector<Named<E>>& names, E value) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return "unknown";
}

template <class E>
std::optional<E> value_in(const std::vector<Named<E>>& names, std::string_view name) {
  for (const auto& n : names) {
    if (name == n.name) return n.value;
  }
  return std::nullopt;
}

template <class E>
std::string choices(const std::vector<Named<E>>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    out += names[i].name;
  }
  return out;
}

}  // namespace

const std::vector<TimingModeName>& timing_mode_names() {
  static const std::vector<TimingModeName> names = {
      {TimingMode::kKernel, "kernel"}, {TimingMode::kCudaGraph, "cudagraph"}, {TimingMode::kEvent, "event"}};
  return names;
}
const char* to_string(TimingMode mode) { return name_in(timing_mode_names(), mode); }
std::optional<TimingMode> parse_timing_mode(std::string_view name) { return value_in(timing_mode_names(), name); }
std::string timing_mode_choices() { return choices(timing_mode_names()); }

bool uses_cupti(TimingMode mode) { return mode != TimingMode::kEvent; }

const std::vector<TimingLoopName>& timing_loop_names() {
  static const std::vector<TimingLoopName> names = {{TimingLoop::kGraph, "graph"}, {TimingLoop::kEager, "eager"}};
  return names;
}
const char* to_string(TimingLoop loop) { return name_in(timing_loop_names(), loop); }
std::optional<TimingLoop> parse_timing_loop(std::string_view name) { return value_in(timing_loop_names(), name); }
std::string timing_loop_choices() { return choices(timing_loop_names()); }

const std::vector<IterationSizingName>& iteration_sizing_names() {
  static const std::vector<IterationSizingName> names = {{IterationSizing::kSized, "sized"},
                                                         {IterationSizing::kProbed, "probed"}};
  return names;
}
const char* to_string(IterationSizing sizing) { return name_in(iteration_sizing_names(), sizing); }
std::optional<IterationSizing> parse_iteration_sizing(std::string_view name) {
  return value_in(iteration_sizing_names(), name);
}
std::string iteration_sizing_choices() { return choices(iteration_sizing_names()); }

}  // namespace tunebench
