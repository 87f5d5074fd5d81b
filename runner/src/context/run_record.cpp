#include "context/run_record.hpp"

#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/atomic_file.hpp"
#include "common/regular_file.hpp"

namespace tunebench {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path claim_run_dir(const fs::path& root, std::time_t now) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw std::runtime_error("cannot make " + root.string() + " (" + ec.message() + ")");
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  for (int i = 1; i < 10000; ++i) {
    const fs::path dir = root / (i == 1 ? std::string(stamp) : std::string(stamp) + "-" + std::to_string(i));
    // mkdir either creates the folder or fails with EEXIST: no two runs can both succeed.
    if (::mkdir(dir.c_str(), 0777) == 0) return dir;
    if (errno != EEXIST) {
      throw std::runtime_error("cannot make the run directory " + dir.string() + " (" + std::strerror(errno) + ")");
    }
  }
  throw std::runtime_error("run directory: every name under " + root.string() + " for " + stamp + " is taken");
}

const char* to_string(ConfigSource source) {
  switch (source) {
    case ConfigSource::kCache:
      return "cache";
    case ConfigSource::kTuned:
      return "tuned";
    case ConfigSource::kReplayed:
      return "replayed";
  }
  return "unknown";
}

std::optional<ConfigSource> parse_config_source(const std::string& name) {
  for (auto s : {ConfigSource::kCache, ConfigSource::kTuned, ConfigSource::kReplayed}) {
    if (name == to_string(s)) return s;
  }
  return std::nullopt;
}

void RunRecord::add(RecordedConfig entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!names_.insert(entry.benchmark).second) return;
  entries_.push_back(std::move(entry));
}

std::vector<RecordedConfig> RunRecord::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_;
}

void RunRecord::write(const fs::path& dir) const {
  json configs = json::array();
  for (const auto& e : entries()) {
    configs.push_back({{"benchmark", e.benchmark},
                       {"op", e.op},
                       {"kernel_version", e.kernel_version},
                       {"tuning_key", e.tuning_key},
                       {"device", e.device},
                       {"config", e.config},
                       {"source", to_string(e.source)}});
  }
  const json doc = {{"tunebench_run_record", 1}, {"configs", configs}};
  write_file_atomically(dir / "configs.json", doc.dump(2) + "\n");
}

std::vector<RecordedConfig> RunRecord::read(const fs::path& dir) {
  const fs::path file = dir / "configs.json";
  std::optional<std::string> text;
  try {
    text = read_regular_file(file);
  } catch (const NotRegularFile& e) {
    throw ReplayError(e.what());
  }
  if (!text) {
    // A run stopped before its end has a manifest that still says "running" and no configs.json.
    try {
      const auto manifest = read_regular_file(dir / "manifest.json");
      if (manifest && json::parse(*manifest).value("status", "") == "running") {
        throw ReplayError(dir.string() + ": that run did not complete (interrupted): it recorded no configs to replay");
      }
    } catch (const json::exception&) {
    } catch (const NotRegularFile&) {
    }
    throw ReplayError("REPLAY_FROM=" + dir.string() + ": no " + file.filename().string() +
                      " in it (expected a run directory of an earlier bench run)");
  }
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ReplayError(file.string() + ": empty (expected the configs.json that bench writes in a run directory)");
  }
  std::vector<RecordedConfig> out;
  std::set<std::string> names;
  try {
    const json doc = json::parse(*text);
    // The format's marker is the file's, not the user's: a file without it is named as not being
    // a run record at all, rather than as missing a key.
    if (!doc.is_object() || !doc.contains("tunebench_run_record")) {
      throw ReplayError(file.string() +
                        ": not a tunebench run record (expected the configs.json that bench writes "
                        "in a run directory)");
    }
    if (doc.at("tunebench_run_record").get<int>() != 1) {
      throw ReplayError(file.string() + ": run record format " + doc.at("tunebench_run_record").dump() +
                        ", expected 1");
    }
    if (!doc.at("configs").is_array()) throw ReplayError(file.string() + ": \"configs\" is not a list");
    for (std::size_t i = 0; i < doc.at("configs").size(); ++i) {
      const json& c = doc.at("configs")[i];
      const std::string entry = "configs[" + std::to_string(i) + "]";
      if (!c.is_object()) throw ReplayError(file.string() + ": " + entry + " is not an object: " + c.dump());
      // Each field by name, so an edited entry says which field of which benchmark is wrong.
      const auto text_of = [&](const char* key, const std::string& of) {
        const auto it = c.find(key);
        if (it == c.end()) throw ReplayError(file.string() + ": " + of + "has no \"" + key + "\"");
        if (!it->is_string()) {
          throw ReplayError(file.string() + ": " + of + "has \"" + key + "\": " + it->dump() + ", expected a string");
        }
        return it->get<std::string>();
      };
      const std::string name = text_of("benchmark", entry + " ");
      const std::string of = "benchmark " + name + " ";
      if (!names.insert(name).second) throw ReplayError(file.string() + ": benchmark " + name + " is recorded twice");
      const std::string source = text_of("source", of);
      const auto parsed = parse_config_source(source);
      if (!parsed) {
        throw ReplayError(file.string() + ": benchmark " + name + " has source '" + source +
                          "', expected cache, tuned or replayed");
      }
      out.push_back({name, text_of("op", of), text_of("kernel_version", of), text_of("tuning_key", of),
                     text_of("device", of), text_of("config", of), *parsed});
    }
  } catch (const json::out_of_range& e) {
    // e.what() reads "[json.exception.out_of_range.403] key 'configs' not found": keep the key.
    const std::string what = e.what();
    const auto key = what.find("key '");
    throw ReplayError(file.string() + ": not a tunebench run record (" +
                      (key != std::string::npos ? what.substr(key) : std::string("a field is missing")) + ")");
  } catch (const json::exception&) {
    throw ReplayError(file.string() + ": not a tunebench run record (not the JSON bench writes as configs.json)");
  }
  return out;
}

}  // namespace tunebench
