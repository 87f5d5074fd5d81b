// tunebench-cache export and import, a row at a time: a cache of a million rows goes through in
// the memory of one row (plus SQLite's page cache).

#include <sqlite3.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache_text.hpp"
#include "cache_tool.hpp"
#include "tunebench/cache/write_error.hpp"

namespace tunebench::cache {
namespace {

// What a path that is not a regular file is, for the one-line refusals of export and import.
const char* file_kind_text(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a folder";
    case std::filesystem::file_type::fifo:
      return "a FIFO (named pipe)";
    case std::filesystem::file_type::character:
    case std::filesystem::file_type::block:
      return "a device";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

namespace fs = std::filesystem;
using json = nlohmann::json;

// The export's format: the keys, bests and measurements of schema 3, with schema 5's status
// pruned, which an older tunebench-cache would refuse row by row, so the file says 5. Schema 4
// added the leases of keys being tuned, which say what a process is doing now and are not
// exported.
constexpr int kExportSchema = 5;

std::string e(const std::string& text) { return escape_controls(text); }

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json key_json(const Key& k) {
  return {{"op", k.op},
          {"kernel_version", k.kernel_version},
          {"tuning_key", k.tuning_key},
          {"device_name", k.device_name},
          {"device_cc", k.device_cc},
          {"toolkit", k.toolkit},
          {"timing_mode", k.timing_mode}};
}

json opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json measurement_json(const Measurement& m) {
  return {{"config", m.config},
          {"status", std::string(to_string(m.status))},
          {"p20_ns", opt(m.p20_ns)},
          {"p50_ns", opt(m.p50_ns)},
          {"p80_ns", opt(m.p80_ns)},
          {"error", m.error},
          {"measured_at", m.measured_at},
          {"device_uuid", m.device_uuid},
          {"host", m.host}};
}

// JSON holds UTF-8 only: a row with other bytes (written into the cache by hand, say) cannot be
// exported. Names the first such field of the row.
void require_utf8(const std::vector<std::pair<const char*, const std::string*>>& fields, const std::string& row) {
  for (const auto& [name, value] : fields) {
    if (!valid_utf8(*value)) {
      throw std::runtime_error(row + ": \"" + name + "\" '" + e(*value) +
                               "' is not UTF-8, which JSON cannot hold (evict the row or fix it in the cache)");
    }
  }
}

std::vector<std::pair<const char*, const std::string*>> key_fields(const Key& k) {
  return {{"op", &k.op},
          {"kernel_version", &k.kernel_version},
          {"tuning_key", &k.tuning_key},
          {"device_name", &k.device_name},
          {"device_cc", &k.device_cc},
          {"toolkit", &k.toolkit},
          {"timing_mode", &k.timing_mode}};
}

// Thrown by write_export when `out` failed: the rest would be lost too. Whoever made `out` knows
// why (its FirstWriteError).
class WriteFailed : public std::runtime_error {
 public:
  WriteFailed() : std::runtime_error("a write failed") {}
};

// Writes the export to `out`: one line per key, best and measurement; throws std::runtime_error
// naming the row it could not write, and WriteFailed as soon as `out` fails.
void write_export(ConfigCache& cache, std::ostream& out) {
  out << "{\n  \"tunebench_cache_schema\": " << kExportSchema << ",\n  \"entries\": [";
  std::size_t index = 0;
  cache.for_each_key([&](const Key& k) {
    const std::string row =
        "entries[" + std::to_string(index) + "] (op '" + e(k.op) + "', tuning key '" + e(k.tuning_key) + "')";
    require_utf8(key_fields(k), row);
    const auto best = cache.best(k);
    if (best) require_utf8({{"best.config", &best->config}}, row);
    out << (index++ ? ",\n" : "\n") << "    {\n      \"key\": " << key_json(k).dump() << ",\n      \"best\": "
        << (best ? json{{"config", best->config}, {"p50_ns", best->p50_ns}, {"updated_at", best->updated_at}}.dump()
                 : "null")
        << ",\n      \"measurements\": [";
    bool first = true;
    cache.for_each_measurement(k, [&](const Measurement& m) {
      require_utf8({{"config", &m.config}, {"error", &m.error}, {"device_uuid", &m.device_uuid}, {"host", &m.host}},
                   row + " config '" + e(m.config) + "'");
      out << (first ? "\n" : ",\n") << "        " << measurement_json(m).dump();
      first = false;
    });
    out << (first ? "]\n    }" : "\n      ]\n    }");
    if (!out) throw WriteFailed();  // a full disk: stop reading rows nobody can write
  });
  out << (index ? "\n  ]\n}\n" : "]\n}\n");
}

}  // namespace

int export_cache(ConfigCache& cache, const fs::path& target) {
  if (target.empty()) {
    try {
      write_export(cache, std::cout);
    } catch (const WriteFailed&) {
      return 2;  // run_cache_tool says why, as for any command's stdout
    } catch (const std::exception& ex) {
      std::cerr << "tunebench-cache: export: " << ex.what() << " (the rows before it are already on stdout)\n";
      return 2;
    }
    return 0;  // run_cache_tool checks that stdout took it all
  }
  std::error_code ec;
  fs::path file = target;
  if (fs::is_symlink(file, ec)) file = fs::weakly_canonical(file, ec);  // replace what it points to, keep the link
  const auto type = fs::status(file, ec).type();
  const bool exists = type != fs::file_type::not_found;
  if (exists && type != fs::file_type::regular) {
    // Renaming onto a FIFO, a device or a folder would replace it, and writing into one as it is
    // can block for ever (a FIFO without a reader) or fail halfway (/dev/full): only a regular
    // file or a new name is taken. A pipe gets the export through stdout.
    const char* kind = file_kind_text(type);
    std::cerr << "tunebench-cache: export " << e(target.string()) << ": " << kind
              << ", expected a regular file or a new file name (without FILE the export goes to stdout)\n";
    return 2;
  }
  // Written beside the target and renamed onto it once complete: a failure halfway (a row JSON
  // cannot hold, a full disk) leaves an earlier export there as it was.
  fs::path tmp = file;
  tmp += ".tmp." + std::to_string(::getpid());
  const auto fail = [&](const std::string& why) {
    fs::remove(tmp, ec);
    std::cerr << "tunebench-cache: export " << e(target.string()) << ": " << why << "; "
              << (exists ? "the file there is left as it was" : "nothing written") << "\n";
    return 2;
  };
  {
    std::ofstream disk(tmp, std::ios::binary | std::ios::trunc);
    if (!disk) return fail("cannot create " + e(tmp.string()));
    FirstWriteError watch(disk.rdbuf());  // the error of the write that failed, named below
    std::ostream out(&watch);
    try {
      write_export(cache, out);
    } catch (const WriteFailed&) {
      // named below
    } catch (const std::exception& ex) {
      return fail(ex.what());
    }
    out.flush();
    errno = 0;
    disk.close();  // a full disk may only show when the last buffer goes out
    const int close_errno = errno;
    if (watch.failed() || !out || !disk) {
      return fail("writing " + e(tmp.string()) + " failed (" +
                  (watch.failed() ? watch.why()
                   : close_errno  ? std::string(std::strerror(close_errno))
                                  : std::string("a write failed")) +
                  ")");
    }
  }
  if (exists) fs::permissions(tmp, fs::status(file, ec).permissions(), ec);
  fs::rename(tmp, file, ec);
  if (ec) return fail("cannot rename " + e(tmp.string()) + " onto it: " + ec.message());
  return 0;
}

namespace {

// The object `j`'s member `name`; errors name the member.
const json& member(const json& j, const std::string& name) {
  if (!j.is_object()) throw std::invalid_argument("expected an object holding \"" + name + "\", got " + e(j.dump()));
  if (!j.contains(name)) throw std::invalid_argument("missing \"" + name + "\"");
  return j.at(name);
}

std::string text(const json& j, const std::string& name, bool nonempty = false) {
  const json& v = member(j, name);
  if (!v.is_string()) throw std::invalid_argument("\"" + name + "\": expected a string, got " + e(v.dump()));
  if (nonempty && v.get_ref<const std::string&>().empty()) {
    throw std::invalid_argument("\"" + name + "\": expected a non-empty string");
  }
  return v.get<std::string>();
}

Key key_from(const json& j) {
  return {text(j, "op", true),  text(j, "kernel_version"), text(j, "tuning_key", true), text(j, "device_name"),
          text(j, "device_cc"), text(j, "toolkit"),        text(j, "timing_mode")};
}

std::int64_t integer(const json& j, const std::string& name) {
  const json& v = member(j, name);
  if (!v.is_number_integer()) throw std::invalid_argument("\"" + name + "\": expected an integer, got " + e(v.dump()));
  return v.get<std::int64_t>();
}

std::optional<std::int64_t> optional_integer(const json& j, const std::string& name) {
  if (member(j, name).is_null()) return std::nullopt;
  return integer(j, name);
}

// A Unix time a row was measured or chosen at: after 1970 and not after this machine's clock.
std::int64_t timestamp(const json& j, const std::string& name, std::int64_t now) {
  const std::int64_t t = integer(j, name);
  if (t < 1 || t > now + kClockSkewS) {
    throw std::invalid_argument("\"" + name + "\": " + std::to_string(t) +
                                " is not a time up to now (Unix seconds, 1 to " + std::to_string(now) +
                                " on this machine's clock)");
  }
  return t;
}

// A measured time: nothing tunebench times takes less than kMinPlausibleNs.
void require_plausible(std::int64_t ns, const std::string& what) {
  if (ns < kMinPlausibleNs) {
    throw std::invalid_argument(what + " " + std::to_string(ns) + " ns: expected a measured time of at least " +
                                std::to_string(kMinPlausibleNs) + " ns");
  }
}

// One import: its state as the parser walks the file, a value at a time.
class Import {
 public:
  Import(ConfigCache& cache, const ImportCheck& check, bool keep_unknown_ops)
      : cache_(cache), check_(check), keep_unknown_(keep_unknown_ops), now_(now_s()) {
    for (const auto& name : check_.op_names()) ops_.insert(name);
    // The keys read so far, to refuse one listed twice: in SQLite's temporary storage (pages on
    // disk past its cache), not in a set that would grow with the file.
    cache_.database().exec(
        "CREATE TEMP TABLE IF NOT EXISTS import_keys (k BLOB PRIMARY KEY) WITHOUT ROWID; "
        "DELETE FROM temp.import_keys");
    const int rc = sqlite3_prepare_v2(cache_.database().handle(), "INSERT INTO temp.import_keys VALUES (?1)", -1,
                                      &seen_insert_, nullptr);
    if (rc != SQLITE_OK)
      throw SqliteError("preparing the import: " + describe_error(rc, cache_.database().handle()), rc);
    tx_.emplace(cache_);  // the write lock for the whole import, so the merge reads what it replaces
  }
  ~Import() { sqlite3_finalize(seen_insert_); }
  Import(const Import&) = delete;
  Import& operator=(const Import&) = delete;

  // nlohmann::json's parser callback: `depth` counts the containers around the value (the
  // document is 0). Returns false for a value it has dealt with, so the parser drops it.
  bool on(int depth, json::parse_event_t event, json& parsed) {
    const auto d = static_cast<std::size_t>(depth);
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        kinds_.resize(d + 1);
        kinds_[d] = event == json::parse_event_t::object_start ? '{' : '[';
        if (d == 0 && event != json::parse_event_t::object_start) not_an_export();
        if (d == 1 && in_top("entries")) entries_seen_ = event == json::parse_event_t::array_start;
        if (d == 2 && in_entries() && event != json::parse_event_t::object_start) {
          throw std::invalid_argument(where() + ": expected an object");
        }
        if (d == 2 && in_entries()) start_entry();
        return true;
      case json::parse_event_t::key:
        names_.resize(d + 1);
        names_[d] = parsed.get<std::string>();
        return true;
      case json::parse_event_t::value:
        if (d == 0) not_an_export();
        if (d == 2 && in_entries())
          throw std::invalid_argument(where() + ": expected an object, got " + e(parsed.dump()));
        if (d == 1 && in_top("tunebench_cache_schema")) schema_ = parsed;
        return true;
      case json::parse_event_t::object_end:
        if (d == 3 && in_entry() && names_[3] == "key") {
          start_key(parsed);
          return true;
        }
        if (d == 4 && in_entry() && names_[3] == "measurements" && kinds_[3] == '[' && key_) {
          measurement(parsed);
          return false;
        }
        if (d == 2 && in_entries()) {
          end_entry(parsed);
          return false;
        }
        return true;
      case json::parse_event_t::array_end:
        return true;
    }
    return true;
  }

  // After the whole file: what only its end can tell.
  void finish() {
    if (!entries_seen_) not_an_export();
    if (!schema_.is_number_integer() || schema_.get<std::int64_t>() < 1 ||
        schema_.get<std::int64_t>() > kExportSchema) {
      const bool newer = schema_.is_number_integer() && schema_.get<std::int64_t>() > kExportSchema;
      throw std::invalid_argument(
          "\"tunebench_cache_schema\": " + (schema_.is_null() ? std::string("missing") : "got " + e(schema_.dump())) +
          ", expected an integer from 1 to " + std::to_string(kExportSchema) +
          (newer ? " (a newer tunebench wrote this file: import it with that one)"
                 : " (a file written by tunebench-cache export)"));
    }
  }

  std::size_t keys() const { return index_; }
  std::size_t rows() const { return rows_; }
  std::size_t kept_measurements() const { return kept_measurements_; }
  std::size_t kept_bests() const { return kept_bests_; }
  std::size_t unknown_op_keys() const { return unknown_op_keys_; }
  /// The entry being read, for errors.
  std::string where() const { return "entries[" + std::to_string(index_) + "]"; }
  bool in_entry_now() const { return in_entry_; }

 private:
  [[noreturn]] static void not_an_export() {
    throw std::invalid_argument("not a tunebench-cache export (expected an object with an \"entries\" array)");
  }
  bool in_top(const char* name) const {
    return kinds_.size() > 0 && kinds_[0] == '{' && names_.size() > 1 && names_[1] == name;
  }
  bool in_entries() const { return in_top("entries") && kinds_.size() > 1 && kinds_[1] == '['; }
  bool in_entry() const { return in_entries() && kinds_.size() > 2 && kinds_[2] == '{' && names_.size() > 3; }

  void start_entry() {
    in_entry_ = true;
    key_.reset();
    entry_configs_.clear();
    known_op_ = true;
    if (names_.size() > 3) names_[3].clear();
  }

  void start_key(const json& j) {
    Key k = key_from(j);
    if (!first_sight(key_fields_text(k))) {
      throw std::invalid_argument("key " + e(k.op) + " " + e(k.tuning_key) + " [" + e(k.device_name) + ", " +
                                  e(k.toolkit) + ", " + e(k.timing_mode) + "] is listed twice");
    }
    known_op_ = ops_.count(k.op) > 0;
    if (!known_op_ && !keep_unknown_) {
      std::string names;
      for (const auto& n : ops_) names += (names.empty() ? "" : ", ") + n;
      throw std::invalid_argument("op '" + e(k.op) + "' is not an op of this build (" + names +
                                  "); import --keep-unknown-ops keeps the entries of other builds' ops unchecked");
    }
    if (known_op_) {
      if (const auto why = check_.tuning_key_problem(k.op, k.tuning_key); !why.empty()) {
        throw std::invalid_argument("tuning key '" + e(k.tuning_key) + "' of op " + e(k.op) + ": " + why);
      }
    }
    key_ = std::move(k);
    if (!known_op_) ++unknown_op_keys_;
  }

  void check_config(const std::string& config) const {
    if (!known_op_) return;
    if (const auto why = check_.config_problem(key_->op, config); !why.empty()) {
      throw std::invalid_argument("config '" + e(config) + "' of op " + e(key_->op) + ": " + why);
    }
  }

  void measurement(const json& m) {
    Measurement r{text(m, "config"),
                  status_from_string(text(m, "status")),
                  optional_integer(m, "p20_ns"),
                  optional_integer(m, "p50_ns"),
                  optional_integer(m, "p80_ns"),
                  text(m, "error"),
                  timestamp(m, "measured_at", now_),
                  text(m, "device_uuid"),
                  m.contains("host") ? text(m, "host") : ""};
    const std::string what = "config '" + e(r.config) + "'";
    if (!entry_configs_.insert(r.config).second) throw std::invalid_argument(what + " is listed twice in its entry");
    check_config(r.config);
    if (r.status == Status::kCompileFailed && known_op_ && !check_.compiles_configs(key_->op)) {
      throw std::invalid_argument(what + " of op " + e(key_->op) + ": status compile_failed, but " + e(key_->op) +
                                  " is a host op, which compiles nothing (a forged row?)");
    }
    for (const auto& t : {r.p20_ns, r.p50_ns, r.p80_ns}) {
      if (t && *t < 0) throw std::invalid_argument("negative time for " + what);
    }
    if ((r.p20_ns && r.p50_ns && *r.p20_ns > *r.p50_ns) || (r.p50_ns && r.p80_ns && *r.p50_ns > *r.p80_ns)) {
      throw std::invalid_argument(what + ": expected p20_ns <= p50_ns <= p80_ns");
    }
    if (r.status == Status::kOk) {
      if (!r.p50_ns) throw std::invalid_argument(what + ": status ok without a p50_ns");
      require_plausible(*r.p50_ns, what + ": p50_ns");
    }
    if (r.status != Status::kOk && (r.p20_ns || r.p50_ns || r.p80_ns)) {
      // The sweep stores times with ok rows alone: a failed, timed-out or pruned config has none.
      throw std::invalid_argument(what + ": status " + std::string(to_string(r.status)) +
                                  " with a time; only an ok row has p20_ns, p50_ns or p80_ns");
    }
    ++rows_;
    // Merging: what the cache learnt later wins. An imported measurement replaces the cache's of
    // the same config only if it is newer, so importing an old export cannot undo a later tuning;
    // one of the same second keeps the cache's (the file cannot be told newer).
    if (const auto have = cache_.measurement(*key_, r.config); have && have->measured_at >= r.measured_at) {
      ++kept_measurements_;
      return;
    }
    tx_store(*key_, {r}, std::nullopt);
  }

  void end_entry(const json& entry) {
    if (!key_) start_key(member(entry, "key"));  // "key" was no object: member() or key_from() says so
    const json& listed = member(entry, "measurements");
    if (!listed.is_array()) throw std::invalid_argument("\"measurements\": expected an array, got " + e(listed.dump()));
    for (const auto& m : listed) measurement(m);  // those read before the key, if the file put them first
    std::optional<Best> best;
    if (const json& b = member(entry, "best"); !b.is_null()) {
      best = Best{text(b, "config"), integer(b, "p50_ns"), timestamp(b, "updated_at", now_)};
      check_config(best->config);
      if (best->p50_ns < 0) throw std::invalid_argument("negative p50_ns of the best config");
      // 0: a key only one config could run, stored untimed.
      if (best->p50_ns != 0) require_plausible(best->p50_ns, "best config '" + e(best->config) + "': p50_ns");
      ++rows_;
    }
    if (const auto have = cache_.best(*key_); best && have && have->updated_at >= best->updated_at) {
      best.reset();
      ++kept_bests_;
    }
    if (best) tx_store(*key_, {}, best);
    ++index_;
    in_entry_ = false;
    key_.reset();
  }

  void tx_store(const Key& k, const std::vector<Measurement>& ms, const std::optional<Best>& best) {
    tx_->store(k, ms, best);
  }

  bool first_sight(const std::string& key_text) {
    sqlite3_reset(seen_insert_);
    sqlite3_bind_blob(seen_insert_, 1, key_text.data(), static_cast<int>(key_text.size()), SQLITE_TRANSIENT);
    const int rc = sqlite3_step(seen_insert_);
    if (rc == SQLITE_DONE) return true;
    if ((rc & 0xff) == SQLITE_CONSTRAINT) return false;
    throw SqliteError("import: " + describe_error(rc, cache_.database().handle()), rc);
  }

  static std::string key_fields_text(const Key& k) {
    std::string out;
    for (const auto* f :
         {&k.op, &k.kernel_version, &k.tuning_key, &k.device_name, &k.device_cc, &k.toolkit, &k.timing_mode}) {
      out += std::to_string(f->size()) + ":" + *f;
    }
    return out;
  }

 public:
  void commit() { tx_->commit(); }

 private:
  ConfigCache& cache_;
  const ImportCheck& check_;
  bool keep_unknown_;
  std::int64_t now_;
  std::set<std::string> ops_;
  std::vector<char> kinds_;         // '{' or '[': the container opened at each depth
  std::vector<std::string> names_;  // the member name at each depth, in objects
  json schema_;
  bool entries_seen_ = false;
  bool in_entry_ = false;
  std::optional<Key> key_;               // the entry's key, once read
  std::set<std::string> entry_configs_;  // the configs of the entry's measurements so far
  bool known_op_ = true;
  sqlite3_stmt* seen_insert_ = nullptr;
  std::optional<ConfigCache::Transaction> tx_;
  std::size_t index_ = 0, rows_ = 0, kept_measurements_ = 0, kept_bests_ = 0, unknown_op_keys_ = 0;
};

}  // namespace

int import_cache(ConfigCache& cache, const fs::path& source, const ImportCheck& check, bool keep_unknown_ops) {
  std::error_code ec;
  if (fs::is_directory(source, ec)) {
    std::cerr << "tunebench-cache: import " << e(source.string())
              << ": is a folder, expected a file written by export\n";
    return 2;
  }
  // Opening a FIFO waits for a writer that may never come; a device can be read for ever.
  if (const auto type = fs::status(source, ec).type();
      type != fs::file_type::not_found && type != fs::file_type::regular) {
    const char* kind = file_kind_text(type);
    std::cerr << "tunebench-cache: import " << e(source.string()) << ": " << kind
              << ", expected a regular file written by export\n";
    return 2;
  }
  errno = 0;
  std::ifstream in(source, std::ios::binary);
  if (!in) {
    std::cerr << "tunebench-cache: import: cannot read " << e(source.string())
              << (errno ? " (" + std::string(std::strerror(errno)) + ")" : std::string()) << "\n";
    return 2;
  }
  Import import(cache, check, keep_unknown_ops);
  const std::string name = "tunebench-cache: import " + e(source.string()) + ": ";
  try {
    // What is left of the document (its entries dropped as read) is not needed.
    const json rest = json::parse(
        in, [&](int depth, json::parse_event_t event, json& parsed) { return import.on(depth, event, parsed); });
    (void)rest;
    import.finish();
    import.commit();  // everything at once; any error above rolled everything back
  } catch (const json::parse_error& ex) {
    std::cerr << name << "not JSON at byte " << ex.byte
              << " (expected a file written by tunebench-cache export); nothing imported\n";
    return 2;
  } catch (const std::invalid_argument& ex) {
    std::cerr << name << (import.in_entry_now() ? import.where() + ": " : std::string()) << ex.what()
              << "; nothing imported\n";
    return 2;
  } catch (const json::exception& ex) {
    std::string why = ex.what();  // "[json.exception.<kind>.<id>] ...": keep what follows
    if (const auto close = why.find("] "); close != std::string::npos) why = why.substr(close + 2);
    std::cerr << name << import.where() << ": not a tunebench-cache export entry (" << e(why)
              << "); nothing imported\n";
    return 2;
  }
  const std::size_t kept = import.kept_measurements() + import.kept_bests();
  if (import.rows() > 0 && kept == import.rows()) {
    // A second import of one file, or of an older export: nothing changed, so not "imported".
    std::cout << "nothing imported: the cache already holds "
              << count_of(static_cast<long long>(import.keys()), "key", "keys") << " of the file as new or newer ("
              << count_of(static_cast<long long>(import.kept_measurements()), "measurement", "measurements") << ", "
              << count_of(static_cast<long long>(import.kept_bests()), "best config", "best configs") << ")";
  } else {
    std::cout << "imported " << count_of(static_cast<long long>(import.keys()), "key", "keys");
  }
  if (kept > 0 && kept < import.rows()) {
    std::cout << " (kept the cache's "
              << count_of(static_cast<long long>(import.kept_measurements()), "measurement", "measurements") << " and "
              << count_of(static_cast<long long>(import.kept_bests()), "best config", "best configs")
              << " as new as the file's or newer)";
  }
  if (import.unknown_op_keys() > 0) {
    std::cout << "; " << count_of(static_cast<long long>(import.unknown_op_keys()), "key", "keys")
              << " of ops this build lacks, kept unchecked";
  }
  std::cout << "\n";
  return 0;
}

}  // namespace tunebench::cache
