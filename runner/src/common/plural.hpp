#pragma once
// Counts in messages: "1 key", "2 keys".

#include "tunebench/cache/text.hpp"

namespace tunebench {

/// cache::count_of (tunebench/cache/text.hpp): `n` and the noun, singular when n is 1. One rule
/// for bench's messages and the cache tool's output, kept in cache/, the lowest of the two.
using cache::count_of;

}  // namespace tunebench
