#pragma once
// Counts in messages: "1 key", "2 keys".

#include <string>

namespace tunebench {

/// `n` and the noun, singular when n is 1: count_of(1, "key", "keys") is "1 key".
inline std::string count_of(long long n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

}  // namespace tunebench
