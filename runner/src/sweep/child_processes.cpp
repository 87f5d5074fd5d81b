// ChildProcessExecutor: the sweep in child processes of this binary, one per device token.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/plural.hpp"
#include "context/config_choice.hpp"
#include "sweep/child_start.hpp"
#include "sweep/compile_pool.hpp"
#include "sweep/dead_scratch.hpp"
#include "sweep/executor.hpp"
#include "sweep/shard_plan.hpp"
#include "sweep/worker_record.hpp"
#include "tune/sweep_strategy.hpp"

#include <nlohmann/json.hpp>

namespace tunebench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Child {
  pid_t pid = -1;
  int err_fd = -1;
  std::string partial;  // stderr bytes after the last newline
  int tuned = 0, planned = 0;
  bool exited = false;
  int status = 0;
  std::string device;   // the worker's `started` record: its entry and the card's UUID
  double tuning_s = 0;  // the sum of the key times the worker recorded
  double wall_s = 0;    // from the spawn to the exit
  std::unique_ptr<RecordReader> records;
  std::vector<WorkerRecord> log;                 // every record, for the run dir's sweep.jsonl
  std::map<std::string, WorkerRecord> tuned_of;  // key -> its `tuned` record
  std::vector<std::string> finished;             // keys in the order their `tuned` records came
  std::size_t stored = 0;                        // of which handed to the cache as they finished
  Clock::time_point spawned_at;
  WorkerRecord last_activity;   // what the worker last said it was doing
  Clock::time_point active_at;  // last sign of progress
  bool hung = false;
};

}  // namespace

std::vector<Config> fitting_configs(const Family& f, const RunContext& context) {
  std::vector<Config> fits;
  for (const auto& c : f.op->config_space(context.tune.space)) {
    if (f.op->can_implement(c, f.shape, context.device)) fits.push_back(c);
  }
  return fits;
}

SweepKeys sweep_keys(const std::vector<const Family*>& untuned, const RunContext& context) {
  SweepKeys out;
  std::set<cache::Key> seen;
  for (const Family* f : untuned) {
    if (!seen.insert(cache_key(*f->op, f->shape, context)).second) continue;
    out.keys.push_back(f);
    const auto& fits = out.fitting.emplace_back(fitting_configs(*f, context));
    // Effective rates, not peaks: what the ops reach in a sweep (GPU), or a host core (CPU op).
    const bool gpu = f->op->needs_gpu();
    out.costs.push_back(sweep_cost_s(f->op->flops(f->shape), f->op->bytes(f->shape), static_cast<int>(fits.size()),
                                     context.tune, gpu ? 200e12 : 2e10, gpu ? 2e12 : 1e10));
  }
  return out;
}

// Chosen here, not by fs::temp_directory_path: it takes a variable that is set but empty as the
// folder "".
Scratch::Scratch(const Settings& s, const std::string& prefix, const fs::path& cache) {
  const std::string name = s.tmp_var.empty() ? "/tmp" : s.tmp_var + "='" + s.tmp_dir + "'";
  const fs::path tmp = s.tmp_var.empty() ? fs::path("/tmp") : fs::path(s.tmp_dir);
  std::error_code ec;
  const auto status = fs::status(tmp, ec);
  if (ec || !fs::is_directory(status)) {
    const std::string why = ec ? ec.message() : fs::exists(status) ? "not a folder" : "no such folder";
    throw std::invalid_argument(name + ": " + why + ", expected an existing folder for the sweep's scratch files");
  }
  std::string dir = (tmp / (prefix + "XXXXXX")).string();
  if (!mkdtemp(dir.data())) {
    throw std::invalid_argument(name + ": cannot create " + dir + " (" + std::strerror(errno) +
                                "), expected a writable folder for the sweep's scratch files");
  }
  dir_ = dir;
  write_scratch_owner(dir_, cache);
}

void Scratch::remove() {
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

// The signals that end bench where it stands (Ctrl-C, kill, a closed terminal or ssh drop,
// Ctrl-\) are caught while children run, so that the children are ended and reaped, the scratch
// folder removed and finished keys kept before the signal is re-raised. A signal ignored on
// entry (a background job of a non-interactive shell, nohup) stays ignored: whoever started
// bench chose that it must not stop it. Restored however the sweep ends, so Ctrl-C is never left
// caught by a handler nobody reads.
namespace {
// The handler, once the flag is cleared: a signal that came before this sweep is not its own.
void (*cleared_handler())(int) {
  g_signal = 0;
  return on_signal;
}
}  // namespace

CatchSignals::CatchSignals() : scope_(cleared_handler(), StopSignalScope::Over::kAnyButIgnored) {}

int caught_signal() { return g_signal; }

pid_t spawn_child(const std::string& exe, const std::vector<std::string>& args, const std::string& token,
                  const std::string& store, int err_write) {
  std::vector<std::string> argv_store{exe};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: die with the parent, never write to its stdout, report on the pipe.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, STDOUT_FILENO);
  dup2(err_write, STDERR_FILENO);
  setenv("CUDA_VISIBLE_DEVICES", token.c_str(), 1);
  setenv("TUNEBENCH_CACHE", store.c_str(), 1);
  execv(exe.c_str(), argv.data());
  std::fprintf(stderr, "cannot start %s: %s\n", exe.c_str(), std::strerror(errno));
  _exit(127);
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status));
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

namespace {

fs::path shard_file(const fs::path& dir, std::size_t i, const char* ext) {
  return dir / ("shard-" + std::to_string(i) + ext);
}

// Starts child i: its key list, its own cache (seeded with what is known of its keys, failures
// above all, so a config that left a sticky error in an earlier round is not tried again, and
// with each key's half-M key where the cache has a best for it, which the race prunes by; merge
// leaves those out).
void start_child(Child& c, std::size_t i, const std::vector<const Family*>& mine, const fs::path& dir,
                 const std::string& device, const ChildLaunch& launch, const RunContext& context) {
  const fs::path list = shard_file(dir, i, ".txt");
  {
    std::ofstream out(list);
    for (const Family* f : mine) out << f->name << "\n";
  }
  std::vector<std::string> args;
  for (const auto& a : launch.args) {
    if (a.rfind("--tunebench_cache=", 0) != 0) args.push_back(a);  // the shard has its own
  }
  const std::string store = shard_file(dir, i, ".sqlite").string();
  args.push_back("--tunebench_cache=" + store);
  if (context.cache) {
    std::vector<cache::ConfigCache::Entry> known;
    std::set<cache::Key> keys;
    for (const Family* f : mine) keys.insert(cache_key(*f->op, f->shape, context));
    for (const Family* f : mine) {
      const auto key = cache_key(*f->op, f->shape, context);
      auto ms = context.cache->measurements(key);
      if (!ms.empty()) known.push_back({key, std::move(ms), std::nullopt});
      const auto half = half_m_key(*f->op, f->shape, context);
      if (!half || !keys.insert(*half).second) continue;  // none, its own key, or given already
      if (auto best = context.cache->best(*half))
        known.push_back({*half, context.cache->measurements(*half), std::move(best)});
    }
    if (!known.empty()) cache::ConfigCache(store).store(known);
  }
  args.push_back("--tunebench_shard=" + std::to_string(i) + ":" + list.string());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("sweep: pipe failed");
  c.records = std::make_unique<RecordReader>(list.string() + ".records");
  c.active_at = Clock::now();
  c.planned = static_cast<int>(mine.size());
  c.spawned_at = Clock::now();
  c.pid = spawn_child(launch.exe, args, device, store, fds[1]);
  close(fds[1]);
  c.err_fd = fds[0];
}

void forward_stderr(Child& c, std::size_t shard, const char* data, std::size_t n) {
  c.partial.append(data, n);
  std::size_t nl;
  while ((nl = c.partial.find('\n')) != std::string::npos) {
    std::cerr << "[shard " << shard << "] " << c.partial.substr(0, nl) << "\n";
    c.partial.erase(0, nl + 1);
    c.active_at = Clock::now();
  }
}

void read_stderr(std::vector<Child>& children, bool tty) {
  std::vector<pollfd> fds;
  std::vector<std::size_t> owner;
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (children[i].err_fd >= 0) {
      fds.push_back({children[i].err_fd, POLLIN, 0});
      owner.push_back(i);
    }
  }
  if (!fds.empty()) poll(fds.data(), fds.size(), 100);
  for (std::size_t j = 0; j < fds.size(); ++j) {
    if (!(fds[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Child& c = children[owner[j]];
    char buf[4096];
    const ssize_t got = read(c.err_fd, buf, sizeof buf);
    if (got > 0) {
      if (tty) std::cerr << "\r\033[K";
      forward_stderr(c, owner[j], buf, static_cast<std::size_t>(got));
    } else if (got == 0 || (got < 0 && errno != EINTR)) {
      close(c.err_fd);
      c.err_fd = -1;
    }
  }
}

// The workers' records: progress for the watchdog, finished keys for the figures.
void read_records(Child& c) {
  for (auto& r : c.records->poll()) {
    c.active_at = Clock::now();
    c.log.push_back(r);
    if (r.kind == WorkerRecord::Kind::kTuned) {
      ++c.tuned;
      c.tuning_s += r.seconds;
      c.tuned_of[r.key] = r;
      c.finished.push_back(r.key);
    } else if (r.kind == WorkerRecord::Kind::kStarted) {
      c.device = r.device;
    } else {
      c.last_activity = std::move(r);
    }
  }
}

// A worker without a record for `hang_s` is killed (reported after the loop). Compiling runs no
// kernel: the watchdog judges kernels, so its clock waits while a worker compiles, and while it
// waits for the host's cores (the shard holding them is watched here too: if it hangs it is
// killed, and the cores are free again).
void watch(Child& c, double hang_s) {
  if (c.exited || c.hung) return;
  read_records(c);
  if (c.last_activity.kind == WorkerRecord::Kind::kCompiling || c.last_activity.kind == WorkerRecord::Kind::kWaiting) {
    c.active_at = Clock::now();
  } else if (since(c.active_at) > hang_s) {
    c.hung = true;
    kill(c.pid, SIGKILL);
  }
}

void show_progress(const std::vector<Child>& children, int keys, Clock::time_point started) {
  const double elapsed = since(started);
  int done = 0, total = 0;
  std::string per;
  for (const auto& c : children) {
    done += c.tuned;
    total += c.planned;
    per += " " + std::to_string(c.tuned) + "/" + std::to_string(c.planned);
  }
  const double eta = done > 0 ? elapsed * (total - done) / done : 0;
  // Sweeps, not keys: a doubled key is swept on two shards, so there are more sweeps than keys.
  std::fprintf(stderr, "\r\033[Kparallel warmup: %d/%d sweeps of %s (shards:%s) %.0f s, ETA %.0f s", done, total,
               count_of(keys, "key", "keys").c_str(), per.c_str(), elapsed, eta);
}

// Until every child has exited and closed its stderr; on a signal, ends them (SIGKILL after 2 s).
// `finished(i, key)` is called once for each key child i finishes, as its record comes.
void supervise(std::vector<Child>& children, double hang_s, int keys, Clock::time_point started,
               const std::function<void(std::size_t, const std::string&)>& finished) {
  const bool tty = isatty(STDERR_FILENO);
  bool terminating = false;
  auto terminate_at = Clock::now();
  for (;;) {
    read_stderr(children, tty);
    bool all_done = true;
    for (auto& c : children) {
      if (!c.exited && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        c.wall_s = since(c.spawned_at);
        read_records(c);
      }
      all_done &= c.exited && c.err_fd < 0;
    }
    for (std::size_t i = 0; i < children.size(); ++i) {
      Child& c = children[i];
      while (c.stored < c.finished.size()) finished(i, c.finished[c.stored++]);
    }
    if (all_done) break;
    for (auto& c : children) watch(c, hang_s);
    if (g_signal && !terminating) {
      terminating = true;
      terminate_at = Clock::now();
      for (auto& c : children) {
        if (!c.exited) kill(c.pid, SIGTERM);
      }
    }
    if (terminating && Clock::now() - terminate_at > std::chrono::seconds(2)) {
      for (auto& c : children) {
        if (!c.exited) kill(c.pid, SIGKILL);
      }
    }
    if (tty && !terminating) show_progress(children, keys, started);
  }
  if (tty) std::cerr << "\r\033[K";
}

// A hung worker's config is a result: stored as timeout, so no later round tries it again.
void record_hang(const Child& c, std::size_t i, const std::string& device, double hang_s, const SweepKeys& k,
                 const RunContext& context) {
  const WorkerRecord& a = c.last_activity;
  const char* step = a.kind == WorkerRecord::Kind::kCompiling ? "precompiling"
                     : a.kind == WorkerRecord::Kind::kWaiting ? "waiting for the host's cores"
                                                              : "preparing";
  std::cerr << "bench: WARNING: shard " << i << " (CUDA_VISIBLE_DEVICES=" << device << ") hung on "
            << (a.key.empty() ? std::string("its start-up")
                              : a.key + " [" + (a.kind == WorkerRecord::Kind::kTiming ? a.config : step) + "]")
            << " for " << static_cast<long long>(hang_s) << " s without progress; killed after " << c.tuned << " of "
            << count_of(c.planned, "key", "keys") << "\n";
  const auto f = std::find_if(k.keys.begin(), k.keys.end(), [&](const Family* key) { return key->name == a.key; });
  if (f == k.keys.end() || !context.cache || a.kind != WorkerRecord::Kind::kTiming) return;
  try {
    Config::parse(a.config);
  } catch (const ConfigError&) {
    return;  // an interleaved round of several configs: which one hung cannot be said
  }
  cache::Measurement m;
  m.config = a.config;
  m.status = cache::Status::kTimeout;
  m.error =
      "no progress for " + std::to_string(static_cast<long long>(hang_s)) + " s (hung); killed by the sweep's watchdog";
  m.device_uuid = "";
  context.cache->store(cache_key(*(*f)->op, (*f)->shape, context), {m}, std::nullopt);
}

void account(const std::vector<Child>& children, const std::vector<std::string>& devices, double hang_s,
             const SweepKeys& k, const RunContext& context, SweepReport& report) {
  for (std::size_t i = 0; i < children.size(); ++i) {
    const Child& c = children[i];
    report.tuned += c.tuned;
    report.per_shard.push_back({c.tuned, c.tuning_s, c.wall_s, c.device.empty() ? devices[i] : c.device});
    report.worker_s += c.wall_s;
    for (const auto& [key, r] : c.tuned_of) {
      report.runs += r.runs;
      report.kernel_s += r.kernel_s;
      report.dropped += r.dropped;
      report.pruned += r.pruned;
      report.compile_exposed_s += r.compile_wait_s;
    }
    if (g_signal) continue;  // stopped on purpose
    if (c.hung) {
      ++report.crashed_shards;
      record_hang(c, i, devices[i], hang_s, k, context);
    } else if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
      ++report.crashed_shards;
      std::cerr << "bench: WARNING: shard " << i << " (CUDA_VISIBLE_DEVICES=" << devices[i] << ") "
                << describe_exit(c.status) << " after " << c.tuned << " of " << count_of(c.planned, "key", "keys")
                << "; the rest get another round in fresh processes, or are tuned before their timing loops\n";
    }
  }
}

// Each key a worker finishes goes from its shard's file into the cache at once, so a parent
// killed mid-sweep (SIGKILL: nothing of it runs) has lost none of the keys its workers finished.
// Through a connection of its own that waits for the cache's lock briefly: while another process
// holds it, the key waits for the merge at the end of the sweep, which stores every key again.
class FinishedKeys {
 public:
  FinishedKeys(const SweepKeys& k, const fs::path& dir, const RunContext& context) : k_(k), dir_(dir) {
    if (!context.cache || context.cache->read_only()) return;
    try {
      cache_ = std::make_unique<cache::ConfigCache>(
          context.cache->path(), cache::ConfigCache::OnDamage::kThrow,
          cache::BusyPolicy{std::chrono::milliseconds(200), std::chrono::milliseconds(1000)});
      context_ = &context;
    } catch (const std::exception&) {
      cache_.reset();  // the merge at the end stores them
    }
  }
  void store(std::size_t shard, const std::string& name) {
    if (!cache_) return;
    const auto f = std::find_if(k_.keys.begin(), k_.keys.end(), [&](const Family* key) { return key->name == name; });
    if (f == k_.keys.end()) return;
    try {
      if (shards_.size() <= shard) shards_.resize(shard + 1);
      if (!shards_[shard]) {
        shards_[shard] = std::make_unique<cache::ConfigCache>(shard_file(dir_, shard, ".sqlite"),
                                                              cache::ConfigCache::OnDamage::kThrow);
      }
      const auto key = cache_key(*(*f)->op, (*f)->shape, *context_);
      cache::ConfigCache::Entry entry{key, shards_[shard]->measurements(key), shards_[shard]->best(key)};
      if (entry.best) cache_->store({entry});
    } catch (const std::exception&) {
      // Busy or unreadable now: the merge at the end of the sweep stores it.
    }
  }
  // Closes the connections (before the scratch folder goes).
  void close() {
    shards_.clear();
    cache_.reset();
  }

 private:
  const SweepKeys& k_;
  fs::path dir_;
  const RunContext* context_ = nullptr;
  std::unique_ptr<cache::ConfigCache> cache_;
  std::vector<std::unique_ptr<cache::ConfigCache>> shards_;
};

// Every shard's finished keys merged in one transaction; the best config of each key per shard.
std::map<cache::Key, std::vector<std::string>> merge(const fs::path& dir, std::size_t shards, const RunContext& context,
                                                     ChoiceLog& choices, const std::vector<std::set<cache::Key>>& own) {
  std::vector<cache::ConfigCache::Entry> merged;
  std::map<cache::Key, std::vector<std::string>> winners;
  for (std::size_t i = 0; i < shards; ++i) {
    const fs::path store = shard_file(dir, i, ".sqlite");
    std::error_code ec;
    if (!fs::exists(store, ec)) continue;
    cache::ConfigCache shard(store);
    for (auto& e : shard.entries()) {
      if (i >= own.size() || !own[i].count(e.key)) continue;  // a half-M key it was given to prune by
      if (e.best) winners[e.key].push_back(e.best->config);
      merged.push_back(std::move(e));
    }
  }
  if (context.cache && !merged.empty()) {
    try {
      context.cache->store(merged);
    } catch (const cache::SqliteError& e) {
      if (!cache::is_busy(e.code())) throw;
      // Another process held the cache past the retries: the shards' winners are kept for
      // this run, so no sweep is lost and no later round sweeps the keys again.
      std::set<cache::Key> kept;  // a doubled key comes from two shards
      for (const auto& entry : merged) {
        if (!entry.best) continue;
        choices.keep_unstored(entry.key, Config::parse(entry.best->config));
        kept.insert(entry.key);
      }
      std::cerr << "bench: WARNING: the sweep's results were not stored in " << context.cache->path().string() << " ("
                << e.what() << "); " << count_of(static_cast<long long>(kept.size()), "key", "keys")
                << " kept for this run only\n";
    }
  }
  return winners;
}

// A re-timing on the measurement GPU, for the run dir's sweep log.
nlohmann::json retimed_entry(const Family& f, const std::vector<Config>& contenders, const Config& winner,
                             const SweepStats& stats, double seconds) {
  nlohmann::json j;
  j["record"] = "retimed";
  j["key"] = f.name;
  j["op"] = f.op->name();
  j["tuning_key"] = f.op->tuning_key(f.shape);
  j["worker"] = "bench";
  j["seconds"] = seconds;
  j["runs"] = stats.runs;
  j["kernel_seconds"] = static_cast<double>(stats.kernel_ns) * 1e-9;
  std::vector<std::string> texts;
  for (const auto& c : contenders) texts.push_back(c.str());
  j["finalists"] = texts;
  j["winner"] = winner.str();
  j["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return j;
}

// Configs of `key` the cache measured faster than `best` by more than the tie band: measured on
// another GPU or earlier, they get their chance beside the finalists.
std::vector<Config> faster_than(const Family& f, const cache::Key& key, const cache::Best& best,
                                const RunContext& context) {
  std::vector<Config> out;
  for (const auto& m : context.cache->measurements(key)) {
    if (m.status != cache::Status::kOk || !m.p50_ns || m.config == best.config) continue;
    if (static_cast<double>(*m.p50_ns) * (1.0 + context.tune.tie_tolerance) >= static_cast<double>(best.p50_ns))
      continue;
    try {
      const Config c = Config::parse(m.config);
      if (f.op->can_implement(c, f.shape, context.device)) out.push_back(c);
    } catch (const ConfigError&) {
    }
  }
  return out;
}

}  // namespace

// One key's finalists re-timed on this process's GPU until no config the cache measured is faster
// than the winner by more than the tie band. Returns the winner.
Config retime_finalists(const Family& f, std::vector<Config> contenders, const RunContext& context, ChoiceLog& choices,
                        SweepReport& report, nlohmann::json& log) {
  static const auto final_round = std::make_shared<FinalRound>();
  const auto key = cache_key(*f.op, f.shape, context);
  Config winner;
  for (;;) {
    TuneOptions options = context.tune;
    options.only = in_config_order(*f.op, options.space, contenders);
    options.strategy = final_round;
    SweepStats stats;
    const auto started = Clock::now();
    winner = ensure_tuned(f, context, choices, &options, &stats);
    report.runs += stats.runs;
    report.kernel_s += static_cast<double>(stats.kernel_ns) * 1e-9;
    report.worker_s += since(started);
    report.compile_exposed_s += static_cast<double>(stats.compile_ns) * 1e-9;
    log.push_back(retimed_entry(f, options.only, winner, stats, since(started)));
    if (!context.cache) break;
    const auto best = context.cache->best(key);
    if (!best) break;
    std::size_t before = contenders.size();
    for (const auto& c : faster_than(f, key, *best, context)) {
      if (std::find(contenders.begin(), contenders.end(), c) == contenders.end()) contenders.push_back(c);
    }
    if (contenders.size() == before) break;
  }
  return winner;
}

namespace {

// The disagreement figure (doubled keys whose shard winners differ), then every key's finalists
// decided on the measurement GPU where a worker elsewhere, or two workers, swept it.
void decide_on_measurement_gpu(const ShardPlan& plan, const SweepKeys& k, const std::vector<Child>& children,
                               const std::map<cache::Key, std::vector<std::string>>& winners, const RunContext& context,
                               ChoiceLog& choices, SweepReport& report, nlohmann::json& log) {
  for (auto i : plan.doubled) {
    const Family& f = *k.keys[i];
    const auto it = winners.find(cache_key(*f.op, f.shape, context));
    if (it != winners.end() && it->second.size() >= 2 && it->second[0] != it->second[1])
      report.disagreeing.push_back(f.name);
  }
  for (const Family* f : k.keys) {
    if (g_signal) return;
    std::vector<Config> contenders;
    int workers = 0;
    bool elsewhere = false;
    for (std::size_t s = 0; s < children.size(); ++s) {
      const auto r = children[s].tuned_of.find(f->name);
      if (r == children[s].tuned_of.end()) continue;
      ++workers;
      elsewhere |= s != 0 && f->op->needs_gpu();
      for (const auto& text : r->second.finalists) {
        const Config c = Config::parse(text);
        if (std::find(contenders.begin(), contenders.end(), c) == contenders.end()) contenders.push_back(c);
      }
    }
    if (contenders.size() < 2 || (workers < 2 && !elsewhere)) continue;
    ++report.retimed;
    report.retimed_on_gpu += f->op->needs_gpu() ? 1 : 0;
    try {
      const Config winner = retime_finalists(*f, contenders, context, choices, report, log);
      const auto w = winners.find(cache_key(*f->op, f->shape, context));
      if (w != winners.end() &&
          std::any_of(w->second.begin(), w->second.end(), [&](const std::string& s) { return s != winner.str(); })) {
        ++report.changed;
      }
    } catch (const std::exception& e) {
      std::cerr << "bench: WARNING: re-timing the finalists of " << f->name << " on the measurement GPU: " << e.what()
                << "\n";
    }
  }
}

// Every worker's records, and the re-timings, appended to the run dir's sweep.jsonl.
void append_log(const RunContext& context, const std::vector<Child>& children, int round,
                const nlohmann::json& retimed) {
  if (context.run_dir.empty()) return;
  std::ofstream out(context.run_dir / "sweep.jsonl", std::ios::app);
  for (std::size_t i = 0; i < children.size(); ++i) {
    for (const auto& r : children[i].log) {
      auto j = nlohmann::json::parse(to_json_line(r));
      j["worker"] = "shard " + std::to_string(i);
      j["round"] = round;
      out << j.dump() << "\n";
    }
  }
  for (auto j : retimed) {
    j["round"] = round;
    out << j.dump() << "\n";
  }
}

}  // namespace

ChildProcessExecutor::ChildProcessExecutor(int shards, std::vector<std::string> tokens, bool isolated,
                                           ChildLaunch launch, const Settings& settings)
    : shards_(shards),
      devices_(shard_devices(tokens, shards, settings.visible_devices ? settings.visible_devices->c_str() : nullptr)),
      isolated_(isolated),
      launch_(std::move(launch)),
      settings_(settings) {}

SweepReport ChildProcessExecutor::sweep(const std::vector<const Family*>& untuned, const RunContext& context,
                                        ChoiceLog& choices, bool first_round) {
  SweepReport report;
  report.shards = shards_;
  const SweepKeys k = sweep_keys(untuned, context);
  report.keys = static_cast<int>(k.keys.size());
  if (k.keys.empty()) return report;
  ShardPlan plan = plan_shards(k.costs, shards_, isolated_ || !first_round ? 0.0 : 0.1);
  if (context.tune.prune_factor > 0) {
    std::vector<std::string> group;
    std::vector<std::int64_t> m;
    for (const Family* f : k.keys) {
      group.push_back(pruning_group(*f));
      m.push_back(f->shape.m);
    }
    order_for_pruning(plan, group, m);
  }
  Scratch scratch(settings_, "tunebench-warmup-", context.cache ? context.cache->path() : fs::path());
  const auto started = Clock::now();
  // The configs every shard will sweep, compiled here once on all cores (N shards compiling the
  // same configs would each spend the whole compile time on 1/N of them), in the order the
  // shards reach the keys, while the shards time the keys compiled before.
  const auto pool = sweep_compile_pool(scratch.dir(), context.device, settings_.fault.slow_compile_s);
  for (const auto i : reach_order(plan, k.costs)) pool->add(k.keys[i]->name, *k.keys[i]->op, k.fitting[i]);
  CatchSignals signals;
  std::vector<Child> children(static_cast<std::size_t>(shards_));
  for (std::size_t i = 0; i < children.size(); ++i) {
    std::vector<const Family*> mine;
    for (auto key : plan.shards[i]) mine.push_back(k.keys[key]);
    start_child(children[i], i, mine, scratch.dir(), devices_[i], launch_, context);
  }
  FinishedKeys as_they_finish(k, scratch.dir(), context);
  supervise(children, settings_.hang_timeout_s, report.keys, started,
            [&](std::size_t i, const std::string& key) { as_they_finish.store(i, key); });
  as_they_finish.close();
  pool->stop();  // what is left was for shards that died: later rounds compile it
  report.compile_s = pool->seconds();
  account(children, devices_, settings_.hang_timeout_s, k, context, report);
  if (std::any_of(k.keys.begin(), k.keys.end(), [](const Family* f) { return f->op->needs_gpu(); })) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "bench: compiled %s for the sweep in %.1f s beside the timing; the workers waited %.1f s for it\n",
                  count_of(static_cast<long long>(pool->compiled()), "config", "configs").c_str(), report.compile_s,
                  report.compile_exposed_s);
    std::cerr << line;
  }
  std::vector<std::set<cache::Key>> own(children.size());
  for (std::size_t i = 0; i < children.size(); ++i) {
    for (auto key : plan.shards[i]) own[i].insert(cache_key(*k.keys[key]->op, k.keys[key]->shape, context));
  }
  const auto winners = merge(scratch.dir(), children.size(), context, choices, own);
  nlohmann::json retimed = nlohmann::json::array();
  if (!isolated_) decide_on_measurement_gpu(plan, k, children, winners, context, choices, report, retimed);
  append_log(context, children, ++rounds_, retimed);
  scratch.remove();
  report.seconds = since(started);
  signals.restore();
  if (g_signal) {
    std::cerr << "bench: interrupted during the autotune sweep; "
              << count_of(report.tuned, "finished key", "finished keys") << " kept"
              << (context.run_dir.empty() ? "" : "; the run directory " + context.run_dir.string() + " stays 'running'")
              << "\n";
    report.interrupted_by = g_signal;
  }
  return report;
}

}  // namespace tunebench
