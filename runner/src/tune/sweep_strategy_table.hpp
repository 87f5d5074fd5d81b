#pragma once
// The sweep strategies a run can pick (TUNEBENCH_SWEEP), one row each: its name, its help and
// its factory. The settings row of TUNEBENCH_SWEEP takes its accepted values and its help from
// here, and the run's context its strategy, so a new strategy is its own file in tune/ and one
// row in sweep_strategy_table.cpp. Includes nothing of tunebench's, so that settings/ can read it.

#include <memory>
#include <string>
#include <vector>

namespace tunebench {

class SweepStrategy;

/// One strategy a run can pick by name.
struct SweepStrategyRow {
  const char* name;  ///< TUNEBENCH_SWEEP's value; also SweepStrategy::name() of what `make` makes
  /// What it does, one line of Markdown, shown after the name in TUNEBENCH_SWEEP's help (and so
  /// in the README's table of settings, which a test checks against the settings table).
  const char* help;
  /// A new instance. Strategies hold no state between keys: one instance serves every key and
  /// thread of a run.
  std::shared_ptr<const SweepStrategy> (*make)();
};

/// Every strategy a run can pick, the default first.
const std::vector<SweepStrategyRow>& sweep_strategy_table();

/// The default strategy's name: the table's first row ("race").
std::string default_sweep_strategy();

/// The table's names for messages, in its order: "race or full".
std::string sweep_strategy_choices();

/// The strategy of the table named `name`. Throws std::invalid_argument, one line naming
/// `source` (the flag or variable that gave it) and the table's names, for a name the table
/// lacks: "TUNEBENCH_SWEEP='fastest': expected race or full".
std::shared_ptr<const SweepStrategy> sweep_strategy(const std::string& name, const std::string& source);

}  // namespace tunebench
