#pragma once
// Keys that several processes share one cache for: each key is tuned by one of them at a time.
// A process tunes a key only while it holds the key's lease in the cache (ConfigCache::claim);
// the others wait for its result, and take the key over when that process is gone, its lease
// expired or it made no progress (cache/include/tunebench/cache/lease.hpp).

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "context/run_context.hpp"
#include "plan/family.hpp"

namespace tunebench {

/// Leases this process takes in context.cache for the keys it is about to tune, released when
/// this object goes (or by release_all). Without a cache, or with a read-only one (nothing can be
/// tuned into it anyway), every key counts as this process's.
class KeyLeases {
 public:
  /// `who`: what tunes the keys, in front of messages ("parallel warmup"; "" for bench itself).
  KeyLeases(const RunContext& context, const std::string& who);
  ~KeyLeases();
  KeyLeases(const KeyLeases&) = delete;
  KeyLeases& operator=(const KeyLeases&) = delete;

  /// `families` split by their keys (one claim per key): those whose lease this process holds
  /// now (free, or taken over from a holder that is gone: said in one line per holder), and
  /// those another live process is tuning. A key whose claim finds the cache locked past its
  /// busy timeout counts as this process's, unleased (nobody can take leases then), and so does
  /// every key after it in this call. Throws
  /// cache::SqliteError for other failures of the cache.
  struct Split {
    std::vector<const Family*> mine;
    std::vector<const Family*> others;
  };
  Split claim(const std::vector<const Family*>& families);

  /// Waits while other processes tune the keys of `others`; `answered(f)` says whether the cache
  /// answers f now. One line on stderr when the wait begins (who holds how many keys). Returns
  /// as soon as some keys are this process's (their holders went, expired or stalled: one line
  /// each, or released them unanswered): those families, with their leases held; returns empty
  /// once every key is answered. Polls the cache, a few times a second.
  std::vector<const Family*> wait(const std::vector<const Family*>& others,
                                  const std::function<bool(const Family&)>& answered);

  /// Gives up every lease this object took.
  void release_all();

 private:
  const RunContext& context_;
  std::string who_;  // "parallel warmup: ", or ""
  std::set<cache::Key> held_;
};

}  // namespace tunebench
