#pragma once
// One entry of the "context" of Google Benchmark's output.

#include <string>

namespace tunebench {

/// One entry of the "context" of Google Benchmark's output (benchmark::AddCustomContext, or
/// added to the results file after the run when the figure is known only then).
struct ContextEntry {
  std::string name;   ///< "parallel_warmup_keys"
  std::string value;  ///< numbers in the "C" form (c_number)
  bool operator==(const ContextEntry& o) const { return name == o.name && value == o.value; }
};

}  // namespace tunebench
