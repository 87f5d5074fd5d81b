#include "cache_text.hpp"

#include <cstdlib>

namespace tunebench::cache {

std::string us_text(const std::optional<std::int64_t>& ns) {
  if (!ns) return "-";
  // Integer arithmetic: no locale can turn the point into a comma, and no double rounds.
  const bool negative = *ns < 0;
  const unsigned long long magnitude = negative ? 0ULL - static_cast<unsigned long long>(*ns) : *ns;
  const unsigned long long hundredths = (magnitude + 5) / 10;  // of a microsecond
  const unsigned long long frac = hundredths % 100;
  return std::string(negative ? "-" : "") + std::to_string(hundredths / 100) + (frac < 10 ? ".0" : ".") +
         std::to_string(frac);
}

}  // namespace tunebench::cache
