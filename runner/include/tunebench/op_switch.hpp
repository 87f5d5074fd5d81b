#pragma once
// Switches an op declares into tunebench's settings table: compile-time variants an A/B
// compares (FLAGGEMS_MXFP4_FOLDSCALE), read from the environment like tunebench's own settings.

#include <string>

namespace tunebench {

/// A 0/1 switch of an op, set by an environment variable. Declared at namespace scope, so the
/// settings table holds it before bench parses its settings: bench then checks it at start with
/// the others (a bad value stops bench with one line, exit status 2), records it in the run's
/// manifest.json when set, and lists it with its help. An op reads value() where it builds its
/// kernels; the switch is not part of the op's config or kernel version, so two runs that differ
/// only in it can replay identical configs (an A/B).
class OpSwitch {
 public:
  /// Declares switch `env` ([A-Z][A-Z0-9_]*) with one line of Markdown `help` and its default.
  /// Throws std::invalid_argument for a bad name or one declared twice.
  OpSwitch(std::string env, std::string help, bool default_value = false);
  OpSwitch(const OpSwitch&) = delete;
  OpSwitch& operator=(const OpSwitch&) = delete;

  /// The variable's value ("0" or "1"), else the default when unset. Throws
  /// std::invalid_argument "ENV='v': expected 0 or 1" for another value.
  bool value() const;

  const std::string& env() const { return env_; }
  const std::string& help() const { return help_; }
  bool default_value() const { return default_; }

 private:
  std::string env_, help_;
  bool default_;
};

}  // namespace tunebench
