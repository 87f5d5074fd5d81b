#include "common/stop_signals.hpp"

namespace tunebench {

StopSignalScope::StopSignalScope(void (*handler)(int), Over over) {
  struct sigaction act {};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    if (sigaction(kStopSignals[i], nullptr, &old_[i]) != 0) continue;
    const bool takes = over == Over::kDefaultOnly ? old_[i].sa_handler == SIG_DFL : old_[i].sa_handler != SIG_IGN;
    if (takes) installed_[i] = sigaction(kStopSignals[i], &act, nullptr) == 0;
  }
}

void StopSignalScope::restore() {
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    if (installed_[i]) sigaction(kStopSignals[i], &old_[i], nullptr);
    installed_[i] = false;
  }
}

}  // namespace tunebench
