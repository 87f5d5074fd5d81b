#pragma once
// Leases on a cache's keys: which process is tuning a key now, so that other processes sharing
// the cache wait for its result instead of tuning the key again, and take the key over when that
// process is gone. Stored in the cache file (table `leases`, schema 4); ConfigCache::claim and
// its kin work on them.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace tunebench::cache {

/// How long leases last and when a holder counts as gone.
struct LeasePolicy {
  /// A lease its holder has not renewed for this long has expired (its holder is taken to be
  /// dead: on another host, or frozen). The holder's heartbeat renews its leases, and writes its
  /// progress time, every min(ttl, stalled_after) / 4.
  std::chrono::milliseconds ttl{60000};
  /// A holder whose tuning reported no progress for this long (a kernel that never returns in a
  /// process that cannot be stopped) is taken to be stuck: its keys may be taken over. Progress
  /// is what ConfigCache::note_progress reports; while `ongoing` is set (compiling, or a parent
  /// whose watchdog watches its workers) the heartbeat counts as progress.
  std::chrono::milliseconds stalled_after{300000};
};

/// Who holds a lease. A process is known by its pid in a pid namespace of one boot of one host
/// (`instance`), and by its start time, so a pid the kernel gave to a later process is not
/// taken for the holder.
struct LeaseHolder {
  std::string host;              ///< host name (gethostname), for messages
  std::string instance;          ///< boot id and pid namespace ("" when unknown: judged by expiry alone)
  std::int64_t pid = 0;          ///< process id in that namespace
  std::int64_t started = 0;      ///< process start time, clock ticks after boot (/proc/PID/stat field 22; 0: unknown)
  std::string token;             ///< the holding ConfigCache object's own random token
  std::int64_t acquired_ms = 0;  ///< Unix milliseconds: when it took the lease
  std::int64_t expires_ms = 0;   ///< Unix milliseconds: when the lease lapses unless renewed
  std::int64_t progress_ms = 0;  ///< Unix milliseconds: the holder's last progress
  /// "pid 1234 on host-a", for messages.
  std::string describe() const;
};

/// This process as a lease holder (token empty): host, instance, pid, start time.
LeaseHolder this_process();

/// Whether the process `holder` names is certainly gone: it ran in this process's pid namespace
/// of this boot (same `instance`, not empty) and no process has its pid, or the one that has it
/// started at another time (a reused pid). False when that cannot be told (another host or
/// namespace): such a holder is judged by its lease's expiry.
bool holder_is_gone(const LeaseHolder& holder);

/// The outcome of ConfigCache::claim.
struct LeaseClaim {
  enum class Outcome {
    kAcquired,     ///< the key was free (or already this object's): the lease is this object's now
    kTakenOver,    ///< its holder was gone, expired or stuck (`why`); the lease is this object's now
    kHeldByOther,  ///< another live holder has it (`holder`)
  };
  Outcome outcome = Outcome::kAcquired;
  std::optional<LeaseHolder> holder;  ///< kHeldByOther: who holds it; kTakenOver: whose it was
  std::string why;                    ///< kTakenOver: "its process is gone", "not renewed for 61 s", ...
  bool ours() const { return outcome != Outcome::kHeldByOther; }
};

/// Unix milliseconds now.
std::int64_t unix_ms();

}  // namespace tunebench::cache
