#pragma once
// A host op for tests that need an Op but none of its work: configs B=<values>, nothing to run.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tunebench/config.hpp"
#include "tunebench/op.hpp"

namespace tunebench::testing {

/// Host op `name` whose default space is B in `default_b` and expanded space B in `expanded_b`
/// (the default space when empty); every shape can run every config; runs do nothing; flops and
/// bytes 1; `baseline` as Op::baseline.
class HostOp final : public Op {
 public:
  HostOp(std::string name, std::vector<std::int64_t> default_b, std::vector<std::int64_t> expanded_b = {},
         std::string baseline = "")
      : name_(std::move(name)),
        default_b_(std::move(default_b)),
        expanded_b_(std::move(expanded_b)),
        baseline_(std::move(baseline)) {}
  std::string name() const override { return name_; }
  std::string baseline() const override { return baseline_; }
  benchmark::TimeUnit time_unit() const override { return benchmark::kMicrosecond; }
  bool needs_gpu() const override { return false; }
  std::string kernel_version() const override { return name_ + "-1"; }
  std::vector<Config> config_space(SpaceKind kind) const override {
    return cartesian_product({{"B", kind == SpaceKind::kExpanded && !expanded_b_.empty() ? expanded_b_ : default_b_}});
  }
  bool can_implement(const Config&, const Shape&, const DeviceInfo&) const override { return true; }
  std::unique_ptr<Workload> prepare(const Shape&, std::uint64_t) const override { return nullptr; }
  void run(Workload&, const Config&, cudaStream_t) const override {}
  double flops(const Shape&) const override { return 1; }
  double bytes(const Shape&) const override { return 1; }

 private:
  std::string name_;
  std::vector<std::int64_t> default_b_, expanded_b_;
  std::string baseline_;
};

/// B values first..last.
inline std::vector<std::int64_t> b_range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (auto b = first; b <= last; ++b) out.push_back(b);
  return out;
}

}  // namespace tunebench::testing
