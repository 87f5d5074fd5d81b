#include "tunebench/op.hpp"

#include <stdexcept>

namespace tunebench {

Config Op::default_config(const Shape& shape, const DeviceInfo& device) const {
  for (auto& config : config_space(SpaceKind::kDefault)) {
    if (can_implement(config, shape, device)) return config;
  }
  throw std::runtime_error(name() + ": no config of the default space can run M=" +
                           std::to_string(shape.m) + " N=" + std::to_string(shape.n) +
                           " K=" + std::to_string(shape.k));
}

}  // namespace tunebench

namespace tunebench {

CheckResult Op::check(Workload&, const Config&, cudaStream_t) const {
  throw std::logic_error(name() + ": no reference to check against");
}

}  // namespace tunebench
