// Lease holders: who a process is, whether it is gone, and the heartbeat that renews its leases.

#include "tunebench/cache/lease.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "heartbeat.hpp"
#include "tunebench/cache/database.hpp"

namespace tunebench::cache {
namespace {

std::string first_line(const char* file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses,
// so the text after its last ')' is split): [0] is field 3 (the state), [19] field 22 (the start
// time in clock ticks after boot). Empty when there is no such process (or no /proc).
std::vector<std::string> stat_fields(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close = text.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

std::int64_t started_of(const std::vector<std::string>& fields) {
  if (fields.size() < 20) return 0;
  try {
    return std::stoll(fields[19]);
  } catch (const std::exception&) {
    return 0;
  }
}

// The boot of this host and the pid namespace this process sees pids in: a pid means a process
// only within both. "" when either cannot be read (then no holder counts as local).
std::string this_instance() {
  static const std::string instance = [] {
    const std::string boot = first_line("/proc/sys/kernel/random/boot_id");
    char ns[128] = {};
    const ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (boot.empty() || n <= 0) return std::string();
    return boot + "/" + std::string(ns, static_cast<std::size_t>(n));
  }();
  return instance;
}

}  // namespace

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string LeaseHolder::describe() const {
  return "pid " + std::to_string(pid) + (host.empty() ? std::string() : " on " + host);
}

LeaseHolder this_process() {
  LeaseHolder me;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) me.host = name;
  me.instance = this_instance();
  me.pid = getpid();
  me.started = started_of(stat_fields("self"));
  return me;
}

bool holder_is_gone(const LeaseHolder& holder) {
  if (holder.instance.empty() || holder.instance != this_instance() || holder.pid <= 0) return false;
  if (kill(static_cast<pid_t>(holder.pid), 0) != 0 && errno == ESRCH) return true;
  const auto fields = stat_fields(std::to_string(holder.pid));
  if (fields.empty()) return false;  // /proc hides it: alive, as far as can be told
  // A zombie has exited (its parent has not reaped it yet); another start time is a reused pid.
  if (fields[0] == "Z" || fields[0] == "X") return true;
  return holder.started != 0 && started_of(fields) != 0 && started_of(fields) != holder.started;
}

namespace detail {

Heartbeat::Heartbeat(std::filesystem::path path, std::string token, LeasePolicy policy)
    : path_(std::move(path)), token_(std::move(token)), policy_(policy), last_progress_ms_(unix_ms()) {
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Heartbeat::progress(bool ongoing) {
  last_progress_ms_ = unix_ms();
  ongoing_ = ongoing;
}

std::int64_t Heartbeat::progress_ms() const { return ongoing_ ? unix_ms() : last_progress_ms_.load(); }

void Heartbeat::run() {
  // Often enough that neither the lease nor the progress time looks stale to a judge.
  const auto beat = std::max(std::chrono::milliseconds(1), std::min(policy_.ttl, policy_.stalled_after) / 4);
  std::optional<Database> db;
  sqlite3_stmt* renew = nullptr;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, beat, [this] { return stop_; })) {
    try {
      if (!db) {
        // A short busy timeout: a beat that cannot have the lock now is tried again at the next.
        db.emplace(path_, static_cast<int>(std::min<std::int64_t>(1000, beat.count())));
        const char* sql = "UPDATE leases SET expires_ms = ?1, progress_ms = ?2 WHERE token = ?3";
        if (sqlite3_prepare_v2(db->handle(), sql, -1, &renew, nullptr) != SQLITE_OK) {
          renew = nullptr;
          db.reset();
          continue;
        }
      }
      sqlite3_reset(renew);
      sqlite3_bind_int64(renew, 1, unix_ms() + policy_.ttl.count());
      sqlite3_bind_int64(renew, 2, progress_ms());
      sqlite3_bind_text(renew, 3, token_.data(), static_cast<int>(token_.size()), SQLITE_TRANSIENT);
      sqlite3_step(renew);
      sqlite3_reset(renew);
    } catch (const std::exception&) {
      // The file could not be opened now; the next beat tries again.
    }
  }
  sqlite3_finalize(renew);
}

}  // namespace detail
}  // namespace tunebench::cache
