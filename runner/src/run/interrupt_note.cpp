#include "run/interrupt_note.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/one_line.hpp"

namespace tunebench {
namespace {

// Written before the handlers go in and read only by them: no allocation in a signal handler.
char g_line[1024];
std::size_t g_length = 0;

void on_signal(int sig) {
  ssize_t written = write(STDERR_FILENO, g_line, g_length);
  (void)written;  // nothing to do about a stderr that cannot take it
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// The handler, once `line` is copied where it reads it (before it can run).
void (*handler_for(const std::string& line))(int) {
  g_length = std::min(line.size(), sizeof g_line - 1);
  std::memcpy(g_line, line.data(), g_length);
  return on_signal;
}

}  // namespace

InterruptNote::InterruptNote(const std::string& line)
    : scope_(handler_for(line), StopSignalScope::Over::kDefaultOnly) {}

std::string interrupted_line(const std::string& results, const std::string& run_dir) {
  std::string line = "bench: interrupted: ";
  line += results.empty() ? "no results file was asked for"
                          : "the results file is left as " + escape_controls(results) + ".incomplete";
  if (!run_dir.empty()) line += "; the run directory " + escape_controls(run_dir) + " stays 'running'";
  return line + "\n";
}

}  // namespace tunebench
