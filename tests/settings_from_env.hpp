#pragma once
// For tests: the settings a bench started with no arguments would parse from the environment.

#include "settings/settings.hpp"

namespace tunebench::testing {

inline Settings settings_from_env() {
  char name[] = "bench";
  char* argv[] = {name, nullptr};
  int argc = 1;
  return parse_settings(&argc, argv, "shapes");
}

}  // namespace tunebench::testing
