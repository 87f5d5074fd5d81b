#pragma once
// Kernel configs: named integer parameters (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, split-K...).

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunebench {

/// A config string that cannot be parsed, or a parameter a config does not have.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One point of an op's config space: an ordered list of (name, value) integer parameters.
/// Names are [A-Za-z0-9_]+ and unique within a config. The order is the op's declaration order
/// and is part of the identity (it keeps labels and cache keys stable).
class Config {
 public:
  using Param = std::pair<std::string, std::int64_t>;

  Config() = default;
  /// Throws ConfigError on a bad or repeated name.
  Config(std::initializer_list<Param> params);
  explicit Config(std::vector<Param> params);

  /// The value of `name`; throws ConfigError naming the parameter if the config lacks it.
  std::int64_t get(std::string_view name) const;
  /// Whether the config has a parameter `name` (ops whose space mixes families of different
  /// parameters tell them apart by it).
  bool has(std::string_view name) const;
  const std::vector<Param>& params() const { return params_; }
  bool empty() const { return params_.empty(); }

  /// "BLOCK_N=64,BLOCK_K=256": the benchmark label and the form stored in caches and run records.
  /// Made once at construction: launch paths look kernels up by it on every run.
  const std::string& str() const { return text_; }
  /// Inverse of str(); "" is the empty config. Throws ConfigError quoting the text on bad input.
  static Config parse(std::string_view text);

  friend bool operator==(const Config& a, const Config& b) { return a.params_ == b.params_; }
  friend bool operator!=(const Config& a, const Config& b) { return !(a == b); }

 private:
  std::vector<Param> params_;
  std::string text_;  // str()
};

/// One tunable parameter and the values it may take, in the order they are tried.
struct ConfigAxis {
  std::string name;
  std::vector<std::int64_t> values;
};

/// Every combination of the axes' values (the first axis varies slowest). An axis with no
/// values gives an empty space; no axes give one empty config.
std::vector<Config> cartesian_product(const std::vector<ConfigAxis>& axes);

}  // namespace tunebench
