#include "context/choice_log.hpp"

namespace tunebench {

std::optional<Config> ChoiceLog::fallback_of(const std::string& family) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = fallback_of_.find(family);
  if (it == fallback_of_.end()) return std::nullopt;
  return it->second;
}

void ChoiceLog::add_fallback(const std::string& family, const std::string& marker, const Config& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  fallback_of_[family] = config;
  markers_[marker].push_back(family);
}

std::map<std::string, std::vector<std::string>> ChoiceLog::markers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return markers_;
}

std::optional<Config> ChoiceLog::unstored(const cache::Key& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = unstored_.find(key);
  if (it == unstored_.end()) return std::nullopt;
  return it->second;
}

void ChoiceLog::keep_unstored(const cache::Key& key, const Config& best) {
  std::lock_guard<std::mutex> lock(mutex_);
  unstored_[key] = best;
}

}  // namespace tunebench
