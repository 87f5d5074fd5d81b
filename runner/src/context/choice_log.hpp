#pragma once
// What settling configs learns during a run beside the cache: replayed configs that were
// replaced, and winners the cache could not take.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tunebench/cache/config_cache.hpp"
#include "tunebench/config.hpp"

namespace tunebench {

/// The run's record of config choices that the cache does not hold. Written by the config choice
/// (config_choice.hpp: during the sweep and in the timing loop) and by the sweep's merges; owned
/// by the run (run/main.cpp) and handed to those stages, never reached through the run's const
/// facts. Thread-safe.
class ChoiceLog {
 public:
  /// The live-tuned config that replaced the replayed config of the family named `family`, if
  /// one did: every later call of that benchmark runs it.
  std::optional<Config> fallback_of(const std::string& family) const;
  /// Records that `family`'s replayed config failed or cannot run and `config` replaced it,
  /// under `marker` ("compile_<op>_evicted", or "compile_<op>_no_evict" when the eviction failed).
  void add_fallback(const std::string& family, const std::string& marker, const Config& config);
  /// marker -> the families it concerns, in the order they fell back (the manifest and the JSON
  /// file's context list them).
  std::map<std::string, std::vector<std::string>> markers() const;

  /// The winner kept for `key` because the cache could not take it, if any.
  std::optional<Config> unstored(const cache::Key& key) const;
  /// Keeps `best` as the winner of `key` for this run: another process held the cache's write
  /// lock past the retries, so the benchmark, and any other of the same key, runs the config
  /// tuned instead of losing the sweep.
  void keep_unstored(const cache::Key& key, const Config& best);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Config> fallback_of_;
  std::map<std::string, std::vector<std::string>> markers_;
  std::map<cache::Key, Config> unstored_;
};

}  // namespace tunebench
