#include "timing/run_timer.hpp"

namespace tunebench {

RunTimer run_by_run(std::function<std::chrono::nanoseconds(const Config& config)> one) {
  return [one = std::move(one)](const std::vector<Config>& runs) {
    std::vector<std::chrono::nanoseconds> times;
    times.reserve(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      try {
        times.push_back(one(runs[i]));
      } catch (const std::exception& e) {
        throw BatchRunError(i, std::current_exception(), e.what());
      }
    }
    return times;
  };
}

}  // namespace tunebench
