#pragma once
// Compilation overlapped with timing. The process that starts a sweep's workers (bench for its
// child processes, each MPI rank for its own child) compiles the configs of their keys on the
// host's cores, key by key in the order the workers reach them, into the on-disk kernel cache,
// and announces each config, and each key once its configs are compiled, in a file of the sweep's
// scratch folder. A worker tuning a GPU key waits for each config's announcement right before
// its first run (or for the key's), so it times a key's first configs while the pool compiles
// the rest and the keys after it; a host op's key is waited for whole, before the host's cores.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sweep/host_cores.hpp"
#include "tunebench/device.hpp"
#include "tunebench/op.hpp"

namespace tunebench {

/// The announcement file of the sweep whose scratch folder is `dir`: the names of the keys
/// (families) whose configs are compiled, one a line, in the order they were. That it exists
/// when a worker starts says that a compile pool feeds the sweep.
std::filesystem::path compiled_keys_file(const std::filesystem::path& dir);

/// The line announcing that config `config` of op `op` is compiled (an announcement file holds
/// these besides key names, which never start with a tab).
std::string compiled_config_line(const std::string& op, const std::string& config);

/// Appends a key's name to an announcement file (compiled_keys_file), one whole line per
/// write() (O_APPEND), so a reader never sees half a name as a whole line.
class CompiledKeysWriter {
 public:
  /// Creates `file` (empty) or opens it for appending. Throws std::runtime_error naming it.
  explicit CompiledKeysWriter(const std::filesystem::path& file);
  ~CompiledKeysWriter();
  CompiledKeysWriter(const CompiledKeysWriter&) = delete;
  CompiledKeysWriter& operator=(const CompiledKeysWriter&) = delete;
  void announce(const std::string& name);

 private:
  int fd_ = -1;
};

/// A worker's view of the announcement file: which keys (and configs) are compiled.
class CompiledKeys {
 public:
  /// `file`: compiled_keys_file of the worker's scratch folder. active() says whether it existed
  /// here (a pool feeds the sweep); when not, nothing is waited for.
  explicit CompiledKeys(std::filesystem::path file);
  /// Whether a pool announces this sweep's keys.
  bool active() const { return active_; }
  /// Whether `name` was announced (reads what was appended since the last call). True when not
  /// active().
  bool announced(const std::string& name);
  /// Blocks until `name` is announced (polling every 20 ms); `on_wait` is called once, before
  /// blocking, when it is not yet. Returns the seconds waited (0 when it was announced, or not
  /// active()).
  double wait_for(const std::string& name, const std::function<void()>& on_wait);
  /// Blocks until config `config` of op `op` is announced (compiled_config_line) or key `key`
  /// is (all of its configs are compiled), polling every 2 ms: a config's wait is short. As
  /// wait_for otherwise.
  double wait_for_config(const std::string& op, const std::string& config, const std::string& key,
                         const std::function<void()>& on_wait);

 private:
  std::filesystem::path file_;
  bool active_ = false;
  long offset_ = 0;
  std::string partial_;
  std::set<std::string> names_;
};

/// Compiles the configs of sweep keys (Op::precompile, one config a call, so an override must be
/// thread-safe, as JitKernelCache::precompile is) on host threads, in the order the keys are
/// added, a config shared by several keys (same op, same Config) once. A key is announced
/// (`on_compiled`, called under the pool's lock by add() or a pool thread) as soon as every
/// config it needs is compiled, whatever the keys before it still wait for (a worker may then
/// tune it first: ready_key); keys completed by one config are announced in the order added. A
/// config that fails to compile counts as compiled (the sweep that runs it reports the failure). The threads run at
/// nice 10, so a worker's launches never queue behind compilation. With a `host_cores` file
/// (host_cores_file), the pool holds the host's cores while it has configs to compile (a shard
/// tunes no host op meanwhile) and lets them go when it has none; it never waits for a worker.
class CompilePool {
 public:
  /// Compiles for `device` on `threads` threads (0: one per hardware thread); `host_cores` empty:
  /// no lock is taken. `on_config_compiled`, when set, is called (under the pool's lock) with
  /// each config as soon as it is compiled, whatever the order, so a worker may time a key's
  /// first configs while the pool compiles the rest.
  CompilePool(DeviceInfo device, int threads, std::function<void(const std::string&)> on_compiled,
              std::filesystem::path host_cores = {},
              std::function<void(const Op&, const Config&)> on_config_compiled = {});
  /// stop().
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// Queues key `name` of `op` with `configs` (the configs its sweep runs); `op` must outlive
  /// the pool. A key added again is compiled and announced again (nothing to compile then).
  void add(const std::string& name, const Op& op, const std::vector<Config>& configs);
  /// Waits until every key added so far is announced.
  void wait();
  /// Abandons the configs not begun, waits for those being compiled, ends the threads. Keys not
  /// announced by then never are. Idempotent.
  void stop();

  /// Configs compiled so far (each once, failures included).
  std::size_t compiled() const;
  /// Wall seconds the pool had configs to compile: from the first config queued to the last
  /// compiled, idle stretches (nothing queued) left out.
  double seconds() const;

 private:
  struct Item {
    const Op* op;
    Config config;
  };
  struct Key {
    std::string name;
    std::size_t left;  // its configs not compiled yet
  };
  using Clock = std::chrono::steady_clock;
  void work();
  bool hold_cores(std::unique_lock<std::mutex>& lock);
  void announce(std::size_t k);
  double busy_seconds() const;

  DeviceInfo device_;
  std::function<void(const std::string&)> on_compiled_;
  std::function<void(const Op&, const Config&)> on_config_compiled_;
  std::unique_ptr<HostCores> cores_;
  HostCores::Held held_ = HostCores::none();
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Item> items_;  // read by workers under mutex_ only (add may grow it)
  std::vector<bool> done_;
  std::vector<std::vector<std::size_t>> waiting_;  // per item, the keys waiting for it
  std::size_t next_ = 0;                           // the next item to begin
  std::size_t done_count_ = 0;                     // items done
  std::vector<Key> keys_;
  std::size_t announced_ = 0;                                       // keys announced
  std::map<std::pair<const Op*, std::string>, std::size_t> index_;  // each config queued, its item
  bool acquiring_ = false;
  bool stopping_ = false;
  double busy_s_ = 0;
  Clock::time_point busy_since_;
  std::vector<std::thread> threads_;
};

/// The compile pool of the sweep whose scratch folder is `dir`, on one thread per hardware
/// thread: its keys and each config announced in compiled_keys_file(dir) (created here, so make
/// it before any worker starts), the host's cores (host_cores_file(dir)) held while it compiles.
/// `late_s` (the slow-compile fault, for tests): each key announced that many seconds late, and
/// no config on its own. Throws
/// std::runtime_error when the files cannot be made.
std::unique_ptr<CompilePool> sweep_compile_pool(const std::filesystem::path& dir, const DeviceInfo& device,
                                                int late_s = 0);

}  // namespace tunebench
