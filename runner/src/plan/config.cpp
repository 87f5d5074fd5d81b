#include "tunebench/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tunebench {
namespace {

void check_name(const std::string& name, const std::vector<Config::Param>& before) {
  const bool ok = !name.empty() &&
                  std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
  if (!ok) throw ConfigError("config parameter name '" + name + "': expected [A-Za-z0-9_]+");
  for (const auto& p : before) {
    if (p.first == name) throw ConfigError("config parameter '" + name + "' given twice");
  }
}

}  // namespace

Config::Config(std::initializer_list<Param> params) : Config(std::vector<Param>(params)) {}

Config::Config(std::vector<Param> params) {
  for (auto& p : params) {
    check_name(p.first, params_);
    params_.push_back(std::move(p));
  }
  for (const auto& [name, value] : params_) {
    if (!text_.empty()) text_ += ',';
    text_ += name + '=' + std::to_string(value);
  }
}

std::int64_t Config::get(std::string_view name) const {
  for (const auto& p : params_) {
    if (p.first == name) return p.second;
  }
  throw ConfigError("config '" + str() + "' has no parameter '" + std::string(name) + "'");
}

bool Config::has(std::string_view name) const {
  for (const auto& p : params_) {
    if (p.first == name) return true;
  }
  return false;
}

Config Config::parse(std::string_view text) {
  std::vector<Param> params;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto comma = std::min(text.find(',', pos), text.size());
    const auto item = text.substr(pos, comma - pos);
    const auto eq = item.find('=');
    std::int64_t value = 0;
    bool ok = eq != std::string_view::npos && eq + 1 < item.size();
    if (ok) {
      const char* last = item.data() + item.size();
      const auto [ptr, ec] = std::from_chars(item.data() + eq + 1, last, value);
      ok = ptr == last && ec == std::errc();
    }
    if (!ok) {
      throw ConfigError("config '" + std::string(text) + "': expected NAME=INTEGER[,NAME=INTEGER...], got '" +
                        std::string(item) + "'");
    }
    const std::string name(item.substr(0, eq));
    check_name(name, params);
    params.emplace_back(name, value);
    pos = comma + 1;
    if (comma + 1 == text.size()) {
      throw ConfigError("config '" + std::string(text) + "': trailing ','");
    }
  }
  return Config(std::move(params));  // the names were checked above, the text is made there
}

std::vector<Config> cartesian_product(const std::vector<ConfigAxis>& axes) {
  std::vector<std::vector<Config::Param>> out(1);
  for (const auto& axis : axes) {
    std::vector<std::vector<Config::Param>> next;
    next.reserve(out.size() * axis.values.size());
    for (const auto& partial : out) {
      for (auto v : axis.values) {
        next.push_back(partial);
        next.back().emplace_back(axis.name, v);
      }
    }
    out = std::move(next);
  }
  std::vector<Config> configs;
  configs.reserve(out.size());
  for (auto& params : out) configs.emplace_back(std::move(params));
  return configs;
}

}  // namespace tunebench
