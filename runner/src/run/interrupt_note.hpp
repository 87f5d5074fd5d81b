#pragma once
// One line on stderr when Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT) ends bench inside Google
// Benchmark's loop, which has no handler of its own: the process still ends by that signal, as
// before, but the user learns where the partial output is.

#include <string>

#include "common/stop_signals.hpp"

namespace tunebench {

/// While alive, a signal of the four whose handler is the default writes `line` (one line, ending
/// in '\n'; at most 1023 bytes are kept) to stderr, then ends the process by that signal. Signals
/// that are ignored or handled (an MPI launcher's, a test's) are left as they are. One at a time:
/// the line is process-wide.
class InterruptNote {
 public:
  explicit InterruptNote(const std::string& line);

 private:
  StopSignalScope scope_;
};

/// bench's line for an interrupted timing stage: where the results file is left
/// (`results` + ".incomplete"; `results` empty: none was asked for) and, with `run_dir` not
/// empty, that the run directory stays `running`.
std::string interrupted_line(const std::string& results, const std::string& run_dir);

}  // namespace tunebench
