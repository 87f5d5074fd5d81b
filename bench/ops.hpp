#pragma once
// The ops bench registers.

#include "tunebench/op.hpp"

namespace tunebench::bench {

/// Every op built into bench, in registration order.
OpList builtin_ops();

}  // namespace tunebench::bench
