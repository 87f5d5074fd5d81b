// Leases of the keys this process tunes (key_lease.hpp).

#include "context/key_lease.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>
#include <utility>

#include "common/one_line.hpp"
#include "common/plural.hpp"
#include "context/config_choice.hpp"

namespace tunebench {
namespace {

// "OP KEY" for one key, "N keys" for more.
std::string keys_text(const std::vector<cache::Key>& keys) {
  if (keys.size() == 1) return escape_controls(keys[0].op + " " + keys[0].tuning_key);
  return count_of(static_cast<long long>(keys.size()), "key", "keys");
}

}  // namespace

KeyLeases::KeyLeases(const RunContext& context, const std::string& who)
    : context_(context), who_(who.empty() ? who : who + ": ") {}

KeyLeases::~KeyLeases() {
  try {
    release_all();
  } catch (const std::exception&) {
    // A lease left behind names this process, which the next claim finds gone or expired.
  }
}

void KeyLeases::release_all() {
  for (const auto& key : held_) context_.cache->release(key);
  held_.clear();
}

KeyLeases::Split KeyLeases::claim(const std::vector<const Family*>& families) {
  Split out;
  if (!context_.cache || context_.cache->read_only()) {
    out.mine = families;
    return out;
  }
  std::map<cache::Key, bool> ours;
  bool locked = false;  // the cache's write lock held past the busy timeout: no more claims now
  // Keys taken over, by whose they were and why: one line per holder.
  std::map<std::pair<std::string, std::string>, std::vector<cache::Key>> taken;
  for (const Family* f : families) {
    const cache::Key key = cache_key(*f->op, f->shape, context_);
    auto it = ours.find(key);
    if (it == ours.end()) {
      cache::LeaseClaim c;
      try {
        if (locked) throw cache::SqliteError("locked", SQLITE_BUSY);
        c = context_.cache->claim(key);
      } catch (const cache::SqliteError& e) {
        // Locked by another process past the busy timeout (a long import): nobody can take or
        // give leases now, so the key is tuned here unleased; its store waits longer, and says
        // so if it cannot store either.
        if (!cache::is_busy(e.code())) throw;
        locked = true;
        it = ours.emplace(key, true).first;
        out.mine.push_back(f);
        continue;
      }
      if (c.outcome == cache::LeaseClaim::Outcome::kTakenOver) taken[{c.holder->describe(), c.why}].push_back(key);
      if (c.ours()) held_.insert(key);
      it = ours.emplace(key, c.ours()).first;
    }
    (it->second ? out.mine : out.others).push_back(f);
  }
  for (const auto& [whose, keys] : taken) {
    std::cerr << "bench: " << who_ << "taking over " << keys_text(keys) << " from " << escape_controls(whose.first)
              << ": " << whose.second << "\n";
  }
  return out;
}

std::vector<const Family*> KeyLeases::wait(const std::vector<const Family*>& others,
                                           const std::function<bool(const Family&)>& answered) {
  std::vector<const Family*> pending = others;
  bool said = false;
  auto pause = std::chrono::milliseconds(100);
  // A key is answered once its holder has let it go with a result: a sweep stores a key's first
  // result before it is final (a parallel warmup's finalists are re-timed after its shards store
  // them), so a result under another process's lease is not yet the one to time.
  const auto settled = [&](const Family* f) {
    return answered(*f) && !context_.cache->lease_holder(cache_key(*f->op, f->shape, context_));
  };
  for (;;) {
    pending.erase(std::remove_if(pending.begin(), pending.end(), settled), pending.end());
    if (pending.empty()) return {};
    if (!said) {
      said = true;
      std::vector<cache::Key> keys;
      std::map<std::string, int> holders;
      for (const Family* f : pending) {
        const cache::Key key = cache_key(*f->op, f->shape, context_);
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        keys.push_back(key);
        if (const auto h = context_.cache->lease_holder(key)) ++holders[h->describe()];
      }
      std::string who;
      for (const auto& [name, n] : holders) {
        who += (who.empty() ? "" : ", ") + escape_controls(name) + (holders.size() > 1 ? ": " + std::to_string(n) : "");
      }
      std::cerr << "bench: " << who_ << keys_text(keys) << (keys.size() == 1 ? " is" : " are")
                << " being tuned by another process (" << who << "); waiting for "
                << (keys.size() == 1 ? "its result" : "their results")
                << ", and taking over any whose process ends without one or stops making progress\n";
    }
    const Split split = claim(pending);
    std::vector<const Family*> mine;
    for (const Family* f : split.mine) {
      // Answered between the look and the claim: the holder stored it and let go.
      if (answered(*f)) {
        const cache::Key key = cache_key(*f->op, f->shape, context_);
        if (held_.erase(key)) context_.cache->release(key);
      } else {
        mine.push_back(f);
      }
    }
    if (!mine.empty()) return mine;
    pending = split.others;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace tunebench
