#pragma once
// tunebench-cache, the command line over the config cache, as a function: its main() lives with
// the ops it checks imports against (bench/cache_tool_main.cpp), which cache/ cannot see.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tunebench/cache/config_cache.hpp"
#include "tunebench/cache/import_check.hpp"

namespace tunebench::cache {

/// Runs tunebench-cache with `args` (the command line without the program name), checking
/// imports against `check`; reads TUNEBENCH_CACHE, XDG_CACHE_HOME and HOME for the default
/// cache. Prints to stdout and stderr and returns the exit status: 0 done, 1 nothing matched
/// (show, evict), 2 bad usage or input, or output that could not be written (stdout, export's
/// FILE); one line on stderr says which, and for an evict or import whose stdout was lost, that
/// the cache was changed all the same.
int run_cache_tool(const std::vector<std::string>& args, const ImportCheck& check);

/// The earliest a measured p50 can be, in nanoseconds: nothing tunebench times is faster (a
/// kernel launch alone takes microseconds), so a smaller time in an import is a made-up one.
constexpr std::int64_t kMinPlausibleNs = 100;
/// How far past this machine's clock an imported timestamp may be (clocks of two machines differ
/// a little); a later one would win every merge with a later import.
constexpr std::int64_t kClockSkewS = 60;

/// `export [FILE]`: writes every key of `cache` as JSON to `target` ("" for stdout, which the
/// caller flushes and checks), a row at a time (bounded memory), through a temporary file renamed
/// onto `target` when complete, so a failure leaves an earlier `target` as it was. `target` must
/// be a regular file or a new name (a link to one is followed): a folder, FIFO, device or socket
/// is refused before anything is written. Returns the exit status; errors are one line on
/// stderr naming the row or the file.
int export_cache(ConfigCache& cache, const std::filesystem::path& target);

/// `import [--keep-unknown-ops] FILE`: merges the export `source` into `cache`, read a value at a
/// time (bounded memory), in one transaction: everything or, on the first bad entry, nothing.
/// Entries are checked against `check` (entries of ops it does not know are refused, or taken
/// unchecked with `keep_unknown_ops`), timestamps against the clock, times for plausibility.
/// Returns the exit status; errors are one line on stderr naming the entry.
int import_cache(ConfigCache& cache, const std::filesystem::path& source, const ImportCheck& check,
                 bool keep_unknown_ops);

}  // namespace tunebench::cache
