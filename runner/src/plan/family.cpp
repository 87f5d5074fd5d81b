#include "plan/family.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iostream>
#include <optional>
#include <set>
#include <stdexcept>

namespace tunebench {

std::string family_name(const Op& op, const Shape& shape) {
  std::string name = op.name() + "/" + shape.set + "/M:" + std::to_string(shape.m) + "/N:" + std::to_string(shape.n) +
                     "/K:" + std::to_string(shape.k);
  if (op.routed()) {
    name += "/E:" + std::to_string(shape.experts) + "/topk:" + std::to_string(shape.top_k);
  }
  return name;
}

std::string reported_name(const Family& family) { return family.name + "/manual_time"; }

std::vector<Family> make_families(const OpList& ops, const std::vector<ShapeSet>& sets) {
  std::vector<Family> families;
  std::set<std::string> names;
  for (const auto& op : ops) {
    ShapeRules rules = op->shape_rules();
    rules.needs_moe = rules.needs_moe || op->routed();  // its names print E and topk
    for (const auto& set : sets) {
      if (!check_shape_rules(set, rules)) continue;
      for (const auto& shape : set.shapes) {
        Family f{family_name(*op, shape), op, shape};
        if (!names.insert(f.name).second) {
          throw std::invalid_argument("benchmark name '" + f.name + "' is registered twice");
        }
        families.push_back(std::move(f));
      }
    }
  }
  return families;
}

}  // namespace tunebench
