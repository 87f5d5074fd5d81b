#include "tune/sweep_strategy_table.hpp"

#include <algorithm>
#include <stdexcept>

#include "tune/sweep_strategy.hpp"

namespace tunebench {

// Each defined in its strategy's file.
std::shared_ptr<const SweepStrategy> make_race_sweep();
std::shared_ptr<const SweepStrategy> make_full_sweep();

const std::vector<SweepStrategyRow>& sweep_strategy_table() {
  static const std::vector<SweepStrategyRow> table{
      {"race",
       "one screening run each, configs clearly slower than the best dropped, survivors raced (interleaved), full "
       "repetitions for the finalists only",
       make_race_sweep},
      {"full", "every config to full repetitions", make_full_sweep},
  };
  return table;
}

std::string default_sweep_strategy() { return sweep_strategy_table().front().name; }

std::string sweep_strategy_choices() {
  const auto& table = sweep_strategy_table();
  std::string out;
  for (std::size_t i = 0; i < table.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == table.size() ? " or " : ", ") + std::string(table[i].name);
  }
  return out;
}

std::optional<std::shared_ptr<const SweepStrategy>> strategy_named(const std::string& name) {
  const auto& table = sweep_strategy_table();
  const auto row = std::find_if(table.begin(), table.end(), [&](const SweepStrategyRow& r) { return name == r.name; });
  if (row == table.end()) return std::nullopt;
  return row->make();
}

std::shared_ptr<const SweepStrategy> sweep_strategy(const std::string& name, const std::string& source) {
  auto strategy = strategy_named(name);
  if (!strategy) throw std::invalid_argument(source + "='" + name + "': expected " + sweep_strategy_choices());
  return *strategy;
}

}  // namespace tunebench
