// tunebench-cache: inspect and repair the config cache without writing SQL.
//
//   tunebench-cache [--cache=FILE] list
//   tunebench-cache [--cache=FILE] show OP TUNING_KEY
//   tunebench-cache [--cache=FILE] evict OP TUNING_KEY [CONFIG]
//   tunebench-cache [--cache=FILE] export [FILE]      (JSON; stdout without FILE)
//   tunebench-cache [--cache=FILE] import FILE        (merge: entries of FILE replace equal ones)
//
// The cache is --cache, else $TUNEBENCH_CACHE, else the XDG default (see database.hpp).
// Exit status: 0 done, 1 nothing matched (show, evict), 2 bad usage or input.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tunebench/cache/config_cache.hpp"

namespace {

using tunebench::cache::Best;
using tunebench::cache::ConfigCache;
using tunebench::cache::Key;
using tunebench::cache::Measurement;
using json = nlohmann::json;

constexpr const char* kUsage =
    "usage: tunebench-cache [--cache=FILE] list | show OP TUNING_KEY | evict OP TUNING_KEY [CONFIG] | "
    "export [FILE] | import FILE";

json key_json(const Key& k) {
  return {{"op", k.op}, {"kernel_version", k.kernel_version}, {"tuning_key", k.tuning_key},
          {"device_name", k.device_name}, {"device_cc", k.device_cc}, {"toolkit", k.toolkit},
          {"timing_mode", k.timing_mode}};
}

json opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json measurement_json(const Measurement& m) {
  return {{"config", m.config}, {"status", std::string(to_string(m.status))}, {"p20_ns", opt(m.p20_ns)},
          {"p50_ns", opt(m.p50_ns)}, {"p80_ns", opt(m.p80_ns)}, {"error", m.error},
          {"measured_at", m.measured_at}, {"device_uuid", m.device_uuid}, {"host", m.host}};
}

std::vector<Key> all_keys(ConfigCache& cache) {
  std::vector<Key> keys = cache.measured_keys();
  for (const auto& [k, b] : cache.list()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  return keys;
}

std::vector<Key> matching(ConfigCache& cache, const std::string& op, const std::string& tuning_key) {
  std::vector<Key> out;
  for (auto& k : all_keys(cache)) {
    if (k.op == op && k.tuning_key == tuning_key) out.push_back(k);
  }
  return out;
}

std::string fmt_us(const std::optional<std::int64_t>& ns) {
  if (!ns) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(*ns) / 1e3);
  return buf;
}

// The object `j`'s member `name`, as JSON of the expected kind; errors name the member.
const json& member(const json& j, const std::string& name) {
  if (!j.is_object()) throw std::invalid_argument("expected an object holding \"" + name + "\", got " + j.dump());
  if (!j.contains(name)) throw std::invalid_argument("missing \"" + name + "\"");
  return j.at(name);
}

std::string text(const json& j, const std::string& name, bool nonempty = false) {
  const json& v = member(j, name);
  if (!v.is_string()) throw std::invalid_argument("\"" + name + "\": expected a string, got " + v.dump());
  if (nonempty && v.get<std::string>().empty()) throw std::invalid_argument("\"" + name + "\": expected a non-empty string");
  return v.get<std::string>();
}

Key key_from(const json& j) {
  return {text(j, "op", true),   text(j, "kernel_version"), text(j, "tuning_key", true), text(j, "device_name"),
          text(j, "device_cc"), text(j, "toolkit"),        text(j, "timing_mode")};
}

std::int64_t integer(const json& j, const std::string& name) {
  const json& v = member(j, name);
  if (!v.is_number_integer()) throw std::invalid_argument("\"" + name + "\": expected an integer, got " + v.dump());
  return v.get<std::int64_t>();
}

std::optional<std::int64_t> optional_integer(const json& j, const std::string& name) {
  if (member(j, name).is_null()) return std::nullopt;
  return integer(j, name);
}

// The device of a key: name and compute capability; a host key has no compute capability.
std::string device_text(const Key& k) {
  return k.device_cc.empty() ? k.device_name : k.device_name + " " + k.device_cc;
}

std::string key_text(const Key& k) {
  return k.op + " " + k.tuning_key + " [" + device_text(k) + ", " + k.toolkit + ", " + k.timing_mode + "]";
}

// A best config's time; a key with a single candidate is stored untimed, with p50 0.
std::string best_time_text(const Best& b) {
  return b.p50_ns == 0 ? "not timed (one candidate)" : "p50 " + fmt_us(b.p50_ns) + " us";
}

int run(std::vector<std::string> args) {
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
        {"list", {0, 0}}, {"show", {2, 2}}, {"evict", {2, 3}}, {"export", {0, 1}}, {"import", {1, 1}}};
    const auto it = arity.find(args[0]);
    if (it == arity.end()) {
      std::cerr << "tunebench-cache: '" << args[0] << "': "
                << (args[0].rfind("-", 0) == 0 ? "unknown option (--cache=FILE comes first)" : "unknown command")
                << "; " << kUsage << "\n";
      return 2;
    }
    const auto misplaced = std::find_if(args.begin() + 1, args.end(),
                                        [](const std::string& a) { return a.rfind("--cache=", 0) == 0; });
    if (misplaced != args.end()) {
      std::string fixed = "tunebench-cache " + *misplaced;  // the command as it should read
      for (const auto& a : args) fixed += a.rfind("--cache=", 0) == 0 ? "" : " " + a;
      std::cerr << "tunebench-cache: " << args[0] << ": '" << *misplaced
                << "' is an option and comes before the command: " << fixed << "\n";
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
    file = tunebench::cache::default_cache_path(
        {std::getenv("TUNEBENCH_CACHE"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")});
  }
  const std::string cmd = args[0];
  // Only import writes: the other commands never create a cache where there was none.
  if (cmd != "import" && !std::filesystem::exists(file)) {
    std::cerr << "tunebench-cache: no cache at " << file.string() << "\n";
    return 2;
  }
  std::error_code size_ec;
  if (cmd != "import" && std::filesystem::is_regular_file(file) && std::filesystem::file_size(file, size_ec) == 0 &&
      !size_ec) {
    std::cerr << "tunebench-cache: " << file.string() << " is empty: not a config cache (bench or import creates one)\n";
    return 2;
  }
  if (cmd == "export" && args.size() == 2 && std::filesystem::exists(args[1]) &&
      std::filesystem::equivalent(args[1], file)) {
    std::cerr << "tunebench-cache: export " << args[1] << ": that is the cache itself\n";
    return 2;
  }
  // Inspecting never changes a damaged file; only import (which writes) starts afresh.
  ConfigCache cache(file, cmd == "import" ? ConfigCache::OnDamage::kMoveAside : ConfigCache::OnDamage::kThrow);
  if ((cmd == "evict" || cmd == "import") && cache.read_only()) {
    std::cerr << "tunebench-cache: " << cmd << ": config cache " << file.string()
              << " is read-only (this user cannot write the file or its folder): nothing "
              << (cmd == "evict" ? "evicted" : "imported") << "\n";
    return 2;
  }

  if (cmd == "list" && args.size() == 1) {
    for (const auto& [k, b] : cache.list()) {
      std::cout << k.op << "  " << k.tuning_key << "  " << b.config << "  " << best_time_text(b) << "  ["
                << device_text(k) << ", " << k.toolkit << ", " << k.timing_mode << "]\n";
    }
    return 0;
  }
  if (cmd == "show" && args.size() == 3) {
    const auto keys = matching(cache, args[1], args[2]);
    for (const auto& k : keys) {
      const auto best = cache.best(k);
      std::cout << k.op << " " << k.tuning_key << " [" << device_text(k) << ", " << k.toolkit
                << ", " << k.timing_mode << ", kernel " << k.kernel_version << "]\n  best: "
                << (best ? best->config : std::string("(none)")) << "\n";
      for (const auto& m : cache.measurements(k)) {
        std::cout << "  " << to_string(m.status) << "  " << m.config << "  p20/p50/p80 " << fmt_us(m.p20_ns) << "/"
                  << fmt_us(m.p50_ns) << "/" << fmt_us(m.p80_ns) << " us" << (m.error.empty() ? "" : "  " + m.error)
                  << "\n";
      }
    }
    if (keys.empty()) std::cerr << "tunebench-cache: no entry for op '" << args[1] << "' key '" << args[2] << "'\n";
    return keys.empty() ? 1 : 0;
  }
  if (cmd == "evict" && (args.size() == 3 || args.size() == 4)) {
    int deleted = 0;
    for (const auto& k : matching(cache, args[1], args[2])) {
      deleted += args.size() == 4 ? cache.erase(k, args[3]) : cache.erase(k);
    }
    if (deleted == 0) {
      std::cerr << "tunebench-cache: nothing to evict for op '" << args[1] << "' key '" << args[2] << "'"
                << (args.size() == 4 ? " config '" + args[3] + "'" : std::string()) << "\n";
      return 1;
    }
    std::cout << "evicted " << deleted << " rows\n";
    return 0;
  }
  if (cmd == "export" && args.size() <= 2) {
    json entries = json::array();
    for (const auto& k : all_keys(cache)) {
      json ms = json::array();
      for (const auto& m : cache.measurements(k)) ms.push_back(measurement_json(m));
      const auto best = cache.best(k);
      entries.push_back({{"key", key_json(k)},
                         {"best", best ? json{{"config", best->config}, {"p50_ns", best->p50_ns},
                                               {"updated_at", best->updated_at}}
                                       : json(nullptr)},
                         {"measurements", ms}});
    }
    const json doc = {{"tunebench_cache_schema", ConfigCache::kSchemaVersion}, {"entries", entries}};
    if (args.size() == 2) {
      std::ofstream out(args[1]);
      out << doc.dump(2) << "\n";
      if (!out) {
        std::cerr << "tunebench-cache: cannot write " << args[1] << "\n";
        return 2;
      }
    } else {
      std::cout << doc.dump(2) << "\n";
    }
    return 0;
  }
  if (cmd == "import" && args.size() == 2) {
    std::ifstream in(args[1]);
    if (!in || std::filesystem::is_directory(args[1])) {
      std::cerr << "tunebench-cache: cannot read " << args[1] << "\n";
      return 2;
    }
    json doc;
    int imported = 0;
    std::size_t kept_measurements = 0, kept_bests = 0;  // the cache's, newer than the file's
    std::size_t index = 0;
    try {
      doc = json::parse(in);
    } catch (const json::exception&) {
      std::cerr << "tunebench-cache: " << args[1] << ": not JSON (expected a file written by tunebench-cache export)\n";
      return 2;
    }
    if (!doc.is_object() || !doc.contains("entries") || !doc["entries"].is_array()) {
      std::cerr << "tunebench-cache: " << args[1]
                << ": not a tunebench-cache export (expected an object with an \"entries\" array)\n";
      return 2;
    }
    if (!doc.contains("tunebench_cache_schema") || !doc["tunebench_cache_schema"].is_number_integer() ||
        doc["tunebench_cache_schema"].get<std::int64_t>() < 1 ||
        doc["tunebench_cache_schema"].get<std::int64_t>() > ConfigCache::kSchemaVersion) {
      std::cerr << "tunebench-cache: " << args[1] << ": \"tunebench_cache_schema\": expected an integer from 1 to "
                << ConfigCache::kSchemaVersion << " (a file written by tunebench-cache export)\n";
      return 2;
    }
    try {
      std::vector<ConfigCache::Entry> entries;
      std::set<std::string> keys_seen;
      for (const auto& e : doc.at("entries")) {
        const Key k = key_from(member(e, "key"));
        std::vector<Measurement> ms;
        const json& listed = member(e, "measurements");
        if (!listed.is_array()) throw std::invalid_argument("\"measurements\": expected an array, got " + listed.dump());
        for (const auto& m : listed) {
          ms.push_back({text(m, "config"), tunebench::cache::status_from_string(text(m, "status")),
                        optional_integer(m, "p20_ns"), optional_integer(m, "p50_ns"), optional_integer(m, "p80_ns"),
                        text(m, "error"), integer(m, "measured_at"), text(m, "device_uuid"),
                        m.contains("host") ? text(m, "host") : std::string()});
        }
        std::optional<Best> best;
        if (const json& b = member(e, "best"); !b.is_null()) {
          best = Best{text(b, "config"), integer(b, "p50_ns"), integer(b, "updated_at")};
        }
        if (!keys_seen.insert(key_text(k)).second) throw std::invalid_argument("key " + key_text(k) + " is listed twice");
        for (const auto& m : ms) {
          for (const auto& t : {m.p20_ns, m.p50_ns, m.p80_ns}) {
            if (t && *t < 0) throw std::invalid_argument("negative time for config '" + m.config + "'");
          }
          if ((m.p20_ns && m.p50_ns && *m.p20_ns > *m.p50_ns) || (m.p50_ns && m.p80_ns && *m.p50_ns > *m.p80_ns)) {
            throw std::invalid_argument("config '" + m.config + "': expected p20_ns <= p50_ns <= p80_ns");
          }
        }
        if (best && best->p50_ns < 0) throw std::invalid_argument("negative p50_ns of the best config");
        // Merging: what the cache learnt later wins. An imported measurement replaces the
        // cache's of the same config only if it is newer, and an imported best only a best
        // updated earlier, so importing an old export cannot undo a later tuning.
        const auto listed_count = ms.size();
        ms.erase(std::remove_if(ms.begin(), ms.end(),
                                [&](const Measurement& m) {
                                  const auto have = cache.measurement(k, m.config);
                                  return have && have->measured_at > m.measured_at;
                                }),
                 ms.end());
        kept_measurements += listed_count - ms.size();
        if (const auto have = cache.best(k); best && have && have->updated_at > best->updated_at) {
          best.reset();
          ++kept_bests;
        }
        entries.push_back({k, ms, best});
        ++index;
      }
      cache.store(entries);  // all or nothing
      imported = static_cast<int>(entries.size());
    } catch (const json::exception& e) {
      // e.what() starts with nlohmann's "[json.exception.<kind>.<id>] ": keep what follows.
      std::string why = e.what();
      if (const auto close = why.find("] "); why.rfind("[json.exception", 0) == 0 && close != std::string::npos) {
        why = why.substr(close + 2);
      }
      std::cerr << "tunebench-cache: " << args[1] << ": entries[" << index << "]: not a tunebench-cache export entry ("
                << why << ")\n";
      return 2;
    } catch (const std::invalid_argument& e) {
      std::cerr << "tunebench-cache: " << args[1] << ": entries[" << index << "]: " << e.what() << "\n";
      return 2;
    }
    std::cout << "imported " << imported << " keys";
    if (kept_measurements + kept_bests > 0) {
      std::cout << " (kept the cache's newer " << kept_measurements << " measurements and " << kept_bests << " best configs)";
    }
    std::cout << "\n";
    return 0;
  }
  std::cerr << kUsage << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "tunebench-cache: " << e.what() << "\n";
    return 2;
  }
}
