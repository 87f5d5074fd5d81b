// tunebench-cache (cache/tools/cache_tool.hpp) with bench's built-in ops, which its imports are
// checked against: the cache library knows no op, so its tool's main() lives here.

#include <charconv>
#include <exception>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cache_tool.hpp"
#include "ops.hpp"
#include "tunebench/cache/import_check.hpp"

namespace {

// What an op of `ops` makes: tuning keys from shapes, configs from its spaces.
class OpsImportCheck final : public tunebench::cache::ImportCheck {
 public:
  explicit OpsImportCheck(tunebench::OpList ops) : ops_(std::move(ops)) {}

  std::vector<std::string> op_names() const override {
    std::vector<std::string> names;
    for (const auto& op : ops_) names.push_back(op->name());
    return names;
  }

  // A key is one the op makes when it is the op's own tuning_key of the shape the key names:
  // "M=..,N=..,K=.." (and ",E=..,topk=.." for a routed op), each value > 0.
  std::string tuning_key_problem(const std::string& name, const std::string& key) const override {
    const tunebench::Op& op = find(name);
    const std::vector<std::string> fields =
        op.routed() ? std::vector<std::string>{"M", "N", "K", "E", "topk"} : std::vector<std::string>{"M", "N", "K"};
    std::string expected;
    for (const auto& f : fields) expected += (expected.empty() ? "" : ",") + f + "=<" + f + ">";
    expected = "expected " + expected + " with each > 0";
    std::vector<std::int64_t> values;
    std::size_t at = 0;
    for (const auto& f : fields) {
      if (key.compare(at, f.size() + 1, f + "=") != 0) return expected;
      at += f.size() + 1;
      std::int64_t v = 0;
      const auto [end, ec] = std::from_chars(key.data() + at, key.data() + key.size(), v);
      if (ec != std::errc() || v <= 0) return expected;
      at = static_cast<std::size_t>(end - key.data());
      values.push_back(v);
      if (at < key.size() && key[at] == ',') ++at;
    }
    if (at != key.size() || key.back() == ',') return expected;
    tunebench::Shape shape;
    shape.m = values[0];
    shape.n = values[1];
    shape.k = values[2];
    if (op.routed()) {
      shape.experts = values[3];
      shape.top_k = values[4];
      if (shape.top_k > shape.experts) return "topk > E: no shape has it";
    }
    if (const auto rules = op.shape_rules(); shape.k % rules.k_multiple != 0) {
      return "K=" + std::to_string(shape.k) + " is not a multiple of " + std::to_string(rules.k_multiple) +
             (rules.k_reason.empty() ? "" : " (" + rules.k_reason + ")");
    }
    // An op that buckets M makes only the bucketed keys (M=4, not M=3, for powers of two).
    if (const auto made = op.tuning_key(shape); made != key) {
      return "no shape gives it (that shape's key is " + made + ")";
    }
    return "";
  }

  std::string config_problem(const std::string& name, const std::string& config) const override {
    auto& known = configs_[name];
    if (known.empty()) {
      const tunebench::Op& op = find(name);
      for (const auto kind : {tunebench::SpaceKind::kDefault, tunebench::SpaceKind::kExpanded}) {
        for (const auto& c : op.config_space(kind)) known.insert(c.str());
      }
    }
    return known.count(config) ? "" : "not a config of its default or expanded space";
  }

  // A GPU op may compile its configs (NVRTC); a host op runs them as they are.
  bool compiles_configs(const std::string& name) const override { return find(name).needs_gpu(); }

 private:
  const tunebench::Op& find(const std::string& name) const {
    for (const auto& op : ops_) {
      if (op->name() == name) return *op;
    }
    throw std::logic_error("op '" + name + "' asked about, but not one of op_names()");
  }

  tunebench::OpList ops_;
  mutable std::map<std::string, std::set<std::string>> configs_;  // filled on first use: spaces are large
};

}  // namespace

int main(int argc, char** argv) {
  tunebench::OpList ops;
  try {
    ops = tunebench::bench::builtin_ops();
  } catch (const std::exception& e) {
    std::cerr << "tunebench-cache: " << e.what() << "\n";
    return 2;
  }
  return tunebench::cache::run_cache_tool(std::vector<std::string>(argv + 1, argv + argc), OpsImportCheck(ops));
}
