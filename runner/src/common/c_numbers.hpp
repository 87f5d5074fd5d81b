#pragma once
// Numbers in the "C" form (a '.' point, no grouping) whatever locale the process is in: an op
// may set the global C++ locale or call setlocale(LC_ALL, ""), and Google Benchmark 1.7.1
// formats with streams (the global C++ locale) and snprintf / strtod (the C locale).

#include <ostream>
#include <string>

namespace tunebench {

/// Makes the numeric category of both the C locale (LC_NUMERIC) and the global C++ locale "C",
/// keeping their other categories. Called at the stage boundaries of a run: before flags are
/// parsed, after a benchmark's body (which prepares ops) and before each report.
void use_c_numbers();

/// `out` formatting numbers in the "C" form from now on (imbued with the classic numeric facets).
void imbue_c_numbers(std::ostream& out);

/// snprintf of one double with `spec` (one conversion, e.g. "%.3g") under the "C" locale, for
/// this thread only: what snprintf gives in a "C" process, whatever the process's locale.
std::string format_c(const char* spec, double value);

/// std::to_string(value) ("%f") in the "C" form.
std::string c_number(double value);

}  // namespace tunebench
