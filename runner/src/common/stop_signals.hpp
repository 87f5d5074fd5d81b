#pragma once
// The signals that end bench where it stands, and a scope that handles them for a while: the
// sweep's children are reaped under one (sweep/child_start.hpp, CatchSignals), the timing stage
// names its partial output under another (run/interrupt_note.hpp).

#include <array>
#include <csignal>

namespace tunebench {

/// Ctrl-C, kill, a closed terminal or ssh drop, Ctrl-\.
inline constexpr std::array<int, 4> kStopSignals{SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/// While alive, `handler` handles the stop signals it may take: under kAnyButIgnored every one
/// not ignored on entry (a background job of a non-interactive shell, nohup: whoever started
/// bench chose that it must not stop it), under kDefaultOnly only those still at the default
/// (another's handler, an MPI launcher's, is left as it is). The dispositions found are restored
/// when it ends, or at restore().
class StopSignalScope {
 public:
  enum class Over { kAnyButIgnored, kDefaultOnly };
  StopSignalScope(void (*handler)(int), Over over);
  ~StopSignalScope() { restore(); }
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
  void restore();

 private:
  std::array<struct sigaction, kStopSignals.size()> old_{};
  std::array<bool, kStopSignals.size()> installed_{};
};

}  // namespace tunebench
