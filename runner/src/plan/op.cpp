#include "tunebench/op.hpp"

#include <stdexcept>

namespace tunebench {

Config Op::default_config(const Shape& shape, const DeviceInfo& device) const {
  for (auto& config : config_space(SpaceKind::kDefault)) {
    if (can_implement(config, shape, device)) return config;
  }
  throw std::runtime_error(name() + ": no config of the default space can run M=" + std::to_string(shape.m) +
                           " N=" + std::to_string(shape.n) + " K=" + std::to_string(shape.k));
}

}  // namespace tunebench

namespace tunebench {

CheckResult Op::check(Workload&, const Config&, cudaStream_t) const {
  throw std::logic_error(name() + ": no reference to check against");
}

}  // namespace tunebench

namespace tunebench {

ShapeRules Op::shape_rules() const {
  ShapeRules rules;
  rules.needs_moe = routed();
  return rules;
}

std::string Op::tuning_key(const Shape& shape) const { return tuning_key_for(shape, routed(), MBucket::kExact); }

std::int64_t bucket_m(std::int64_t m, MBucket bucket) {
  switch (bucket) {
    case MBucket::kExact:
      return m;
    case MBucket::kNextPow2: {
      std::int64_t p = 1;
      while (p < m) p <<= 1;
      return p;
    }
    case MBucket::kAlign32:
      return (m + 31) / 32 * 32;
  }
  return m;
}

std::string tuning_key_for(const Shape& shape, bool routed, MBucket bucket) {
  std::string key = "M=" + std::to_string(bucket_m(shape.m, bucket)) + ",N=" + std::to_string(shape.n) +
                    ",K=" + std::to_string(shape.k);
  if (routed) key += ",E=" + std::to_string(shape.experts) + ",topk=" + std::to_string(shape.top_k);
  return key;
}

}  // namespace tunebench
