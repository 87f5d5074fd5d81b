#pragma once
// Benchmark families: one Google Benchmark benchmark per op x shape set x shape.

#include <memory>
#include <string>
#include <vector>

#include "tunebench/op.hpp"
#include "tunebench/shape.hpp"

namespace tunebench {

/// One registered benchmark: an op on one shape.
struct Family {
  std::string name;  ///< family_name(*op, shape)
  std::shared_ptr<const Op> op;
  Shape shape;
};

/// The stable benchmark name "<op>/<set>/M:<m>/N:<n>/K:<k>", with "/E:<e>/topk:<k>" appended
/// for routed ops, e.g. "mxfp4_moe/dsv4f_decode_ep/M:8/N:4096/K:4096/E:256/topk:6". It depends
/// on nothing but the op and the shape: not on flags, devices or order, so compare.py can pair
/// runs by it. Google Benchmark appends "/manual_time" when it reports the benchmark.
std::string family_name(const Op& op, const Shape& shape);

/// The name Google Benchmark reports and filters on: family_name + "/manual_time".
std::string reported_name(const Family& family);

/// Every op x set x shape, in that nesting order, leaving out the sets an op's shape_rules()
/// do not apply to (a routed op, or one that needs_moe, on a set without a `moe:` block).
/// Throws ShapeError when a set breaks an op's K rule (check_shape_rules: one line naming the
/// file, the entry and its line), std::invalid_argument if two families would share a name
/// (two ops of one name, say).
std::vector<Family> make_families(const OpList& ops, const std::vector<ShapeSet>& sets);

}  // namespace tunebench
