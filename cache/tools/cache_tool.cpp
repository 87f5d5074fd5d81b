// tunebench-cache: inspect and repair the config cache without writing SQL.
//
//   tunebench-cache [--cache=FILE] list
//   tunebench-cache [--cache=FILE] show OP TUNING_KEY
//   tunebench-cache [--cache=FILE] evict OP TUNING_KEY [CONFIG]
//   tunebench-cache [--cache=FILE] export [FILE]      (JSON; stdout without FILE)
//   tunebench-cache [--cache=FILE] import [--keep-unknown-ops] FILE   (merge, checked against the ops)
//
// The cache is --cache, else $TUNEBENCH_CACHE, else the XDG default (see database.hpp).
// Exit status: 0 done, 1 nothing matched (show, evict), 2 bad usage or input, or output that
// could not be written (stdout or the export's FILE; one line says which, and whether an evict
// or import changed the cache all the same).

#include "cache_tool.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cache_text.hpp"
#include "tunebench/cache/write_error.hpp"

namespace tunebench::cache {
namespace {

constexpr const char* kUsage =
    "usage: tunebench-cache [--cache=FILE] list | show OP TUNING_KEY | evict OP TUNING_KEY [CONFIG] | "
    "export [FILE] | import [--keep-unknown-ops] FILE";

std::vector<Key> matching(ConfigCache& cache, const std::string& op, const std::string& tuning_key) {
  std::vector<Key> out;
  cache.for_each_key([&](const Key& k) {
    if (k.op == op && k.tuning_key == tuning_key) out.push_back(k);
  });
  return out;
}

// Why OP TUNING_KEY (and CONFIG, when given) matched nothing, in one line's tail: an op the
// cache holds no key of (and the ops it does hold), a key the op has no entry for, or a config
// the key has no row of. The input is named as given (escaped), so a typo shows.
std::string why_nothing_matched(ConfigCache& cache, const std::string& op, const std::string& tuning_key,
                                const std::string* config) {
  std::set<std::string> ops;
  long long op_keys = 0;
  cache.for_each_key([&](const Key& k) {
    ops.insert(k.op);
    op_keys += k.op == op;
  });
  if (op_keys == 0) {
    std::string held;
    for (const auto& o : ops) held += (held.empty() ? "" : ", ") + escape_controls(o);
    return "the cache holds no key of op '" + escape_controls(op) + "'" +
           (held.empty() ? std::string(" (it is empty)") : " (its ops: " + held + ")");
  }
  if (matching(cache, op, tuning_key).empty()) {
    return "op '" + escape_controls(op) + "' has no key '" + escape_controls(tuning_key) + "' (it has " +
           count_of(op_keys, "key", "keys") + "; tunebench-cache list names them)";
  }
  return "key '" + escape_controls(tuning_key) + "' of op '" + escape_controls(op) + "' has no row of config '" +
         escape_controls(config ? *config : std::string()) + "' (tunebench-cache show " + escape_controls(op) + " " +
         escape_controls(tuning_key) + " lists its rows)";
}

// The device of a key: name and compute capability; a host key has no compute capability.
std::string device_text(const Key& k) {
  return k.device_cc.empty() ? k.device_name : k.device_name + " " + k.device_cc;
}

// A best config's time; a key with a single candidate is stored untimed, with p50 0.
std::string best_time_text(const Best& b) {
  return b.p50_ns == 0 ? "not timed (one candidate)" : "p50 " + us_text(b.p50_ns) + " us";
}

std::string e(const std::string& text) { return escape_controls(text); }

int run(std::vector<std::string> args, const ImportCheck& check) {
  std::filesystem::path file;
  if (!args.empty() && args[0].rfind("--cache=", 0) == 0) {
    file = args[0].substr(8);
    args.erase(args.begin());
    if (file.empty()) {
      std::cerr << "tunebench-cache: --cache=: expected a cache file\n";
      return 2;
    }
  }
  if (args.empty()) {
    std::cerr << kUsage << "\n";
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage << "\n";
    return 0;
  }
  {
    // Each command and the numbers of arguments it takes (after the command).
    static const std::map<std::string, std::pair<std::size_t, std::size_t>> arity = {
        {"list", {0, 0}}, {"show", {2, 2}}, {"evict", {2, 3}}, {"export", {0, 1}}, {"import", {1, 2}}};
    const auto it = arity.find(args[0]);
    if (it == arity.end()) {
      std::cerr << "tunebench-cache: '" << e(args[0]) << "': "
                << (args[0].rfind("-", 0) == 0 ? "unknown option (--cache=FILE comes first)" : "unknown command")
                << "; " << kUsage << "\n";
      return 2;
    }
    const auto misplaced =
        std::find_if(args.begin() + 1, args.end(), [](const std::string& a) { return a.rfind("--cache=", 0) == 0; });
    if (misplaced != args.end()) {
      std::string fixed = "tunebench-cache " + *misplaced;  // the command as it should read
      for (const auto& a : args) fixed += a.rfind("--cache=", 0) == 0 ? "" : " " + a;
      std::cerr << "tunebench-cache: " << e(args[0]) << ": '" << e(*misplaced)
                << "' is an option and comes before the command: " << e(fixed) << "\n";
      return 2;
    }
    const std::size_t n = args.size() - 1;
    if (n < it->second.first || n > it->second.second) {
      std::cerr << "tunebench-cache: " << args[0] << ": wrong number of arguments (" << n << "); " << kUsage << "\n";
      return 2;
    }
  }
  if (file.empty()) {
    // This tool's own environment: the library reads none.
    file = default_cache_path({std::getenv("TUNEBENCH_CACHE"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")});
  }
  const std::string cmd = args[0];
  bool keep_unknown_ops = false;
  if (cmd == "import") {
    keep_unknown_ops = args[1] == "--keep-unknown-ops";
    if (keep_unknown_ops) args.erase(args.begin() + 1);
    if (args.size() != 2 || args[1].rfind("--", 0) == 0) {
      std::cerr << "tunebench-cache: import: expected [--keep-unknown-ops] FILE; " << kUsage << "\n";
      return 2;
    }
  }
  // An empty FILE (an unset shell variable, say) names no file: not stdout for export.
  if ((cmd == "export" || cmd == "import") && args.size() == 2 && args[1].empty()) {
    std::cerr << "tunebench-cache: " << cmd << ": an empty FILE name (expected a file path"
              << (cmd == "export" ? ", or none for stdout" : "") << ")\n";
    return 2;
  }
  // Only import writes: the other commands never create a cache where there was none.
  if (cmd != "import" && !std::filesystem::exists(file)) {
    std::cerr << "tunebench-cache: no cache at " << e(file.string()) << "\n";
    return 2;
  }
  std::error_code ec;
  if (cmd == "export" && args.size() == 2 && std::filesystem::exists(args[1], ec) &&
      std::filesystem::equivalent(args[1], file, ec)) {
    std::cerr << "tunebench-cache: export " << e(args[1]) << ": that is the cache itself\n";
    return 2;
  }
  // list, show and export write nothing: not the journal mode, not a migration. evict leaves a
  // damaged cache alone; import, which brings a whole file of rows, moves it aside as bench does.
  const bool writes = cmd == "evict" || cmd == "import";
  ConfigCache cache(file, cmd == "import" ? ConfigCache::OnDamage::kMoveAside : ConfigCache::OnDamage::kThrow,
                    BusyPolicy(), writes ? Access::kReadWrite : Access::kRead);
  if (writes && cache.read_only()) {
    std::cerr << "tunebench-cache: " << cmd << ": config cache " << e(file.string())
              << " is read-only (this user cannot write the file or its folder): nothing "
              << (cmd == "evict" ? "evicted" : "imported") << "\n";
    return 2;
  }

  if (cmd == "list") {
    for (const auto& [k, b] : cache.list()) {
      std::cout << e(k.op) << "  " << e(k.tuning_key) << "  " << e(b.config) << "  " << best_time_text(b) << "  ["
                << e(device_text(k)) << ", " << e(k.toolkit) << ", " << e(k.timing_mode) << "]\n";
    }
    return 0;
  }
  if (cmd == "show") {
    const auto keys = matching(cache, args[1], args[2]);
    for (const auto& k : keys) {
      const auto best = cache.best(k);
      std::cout << e(k.op) << " " << e(k.tuning_key) << " [" << e(device_text(k)) << ", " << e(k.toolkit) << ", "
                << e(k.timing_mode) << ", kernel " << e(k.kernel_version)
                << "]\n  best: " << (best ? e(best->config) : std::string("(none)")) << "\n";
      cache.for_each_measurement(k, [](const Measurement& m) {
        std::cout << "  " << to_string(m.status) << "  " << e(m.config) << "  p20/p50/p80 " << us_text(m.p20_ns) << "/"
                  << us_text(m.p50_ns) << "/" << us_text(m.p80_ns) << " us"
                  << (m.error.empty() ? "" : "  " + e(m.error)) << "\n";
      });
    }
    if (keys.empty())
      std::cerr << "tunebench-cache: show: nothing to show: " << why_nothing_matched(cache, args[1], args[2], nullptr)
                << "\n";
    return keys.empty() ? 1 : 0;
  }
  if (cmd == "evict") {
    int deleted = 0;
    for (const auto& k : matching(cache, args[1], args[2])) {
      deleted += args.size() == 4 ? cache.erase(k, args[3]) : cache.erase(k);
    }
    if (deleted == 0) {
      std::cerr << "tunebench-cache: evict: nothing evicted: "
                << why_nothing_matched(cache, args[1], args[2], args.size() == 4 ? &args[3] : nullptr) << "\n";
      return 1;
    }
    std::cout << "evicted " << count_of(deleted, "row", "rows") << "\n";
    return 0;
  }
  if (cmd == "export") return export_cache(cache, args.size() == 2 ? std::filesystem::path(args[1]) : "");
  return import_cache(cache, args[1], check, keep_unknown_ops);
}

}  // namespace

int run_cache_tool(const std::vector<std::string>& args, const ImportCheck& check) {
  WatchedStdout out;  // keeps why the first write to stdout failed, for the line below
  int status = 2;
  try {
    status = run(args, check);
  } catch (const std::exception& ex) {
    std::cerr << "tunebench-cache: " << escape_controls(ex.what()) << "\n";
  }
  // list, show, export and --help print to stdout: a full disk or a closed descriptor would
  // lose their output without a word.
  if (const std::string why = out.flush_failure(); !why.empty()) {
    std::string cmd;  // the command whose output it was
    for (const auto& a : args) {
      if (a.rfind("--cache=", 0) != 0) {
        cmd = a;
        break;
      }
    }
    // Exit status 2 reads as "nothing done": an evict or import that succeeded (status 0) has
    // changed the cache all the same, which only this line can say.
    std::string made;
    if (status == 0 && cmd == "evict") made = "; the eviction was made";
    if (status == 0 && cmd == "import") made = "; the import was made";
    std::cerr << "tunebench-cache: " << (cmd.empty() ? "" : e(cmd) + ": ") << "cannot write to stdout (" << why
              << "): the output is lost" << made << "\n";
    status = 2;
  }
  return status;
}

}  // namespace tunebench::cache
