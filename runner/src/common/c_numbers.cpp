#include "common/c_numbers.hpp"

#include <locale.h>
#include <clocale>
#include <cstdio>
#include <locale>

namespace tunebench {
namespace {

// The "C" locale as a locale_t, made once (newlocale never fails for "C").
locale_t c_locale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  return c;
}

}  // namespace

void use_c_numbers() {
  const std::locale global;
  const std::locale c_numeric(global, std::locale::classic(), std::locale::numeric);
  // locale::global of a named locale also sets the whole C locale to that name.
  if (!(c_numeric == global)) std::locale::global(c_numeric);
  std::setlocale(LC_NUMERIC, "C");
}

void imbue_c_numbers(std::ostream& out) {
  out.imbue(std::locale(out.getloc(), std::locale::classic(), std::locale::numeric));
}

std::string format_c(const char* spec, double value) {
  const locale_t previous = uselocale(c_locale());
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  std::string out(64, '\0');
  int n = std::snprintf(out.data(), out.size() + 1, spec, value);
  if (n > static_cast<int>(out.size())) {
    out.resize(static_cast<std::size_t>(n));
    n = std::snprintf(out.data(), out.size() + 1, spec, value);
  }
#pragma GCC diagnostic pop
  uselocale(previous);
  out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
  return out;
}

std::string c_number(double value) { return format_c("%f", value); }

}  // namespace tunebench
