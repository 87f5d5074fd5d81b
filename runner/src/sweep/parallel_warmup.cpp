#include "sweep/parallel_warmup.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace tunebench {

double hang_timeout_s() {
  const char* v = std::getenv("TUNEBENCH_HANG_TIMEOUT");
  if (!v) return 300;
  // Plain decimal seconds only (no sign, blanks, hex or exponent), from 1 s to 1e6 s.
  const std::string text(v);
  const bool decimal = !text.empty() && std::isdigit(static_cast<unsigned char>(text.front())) &&
                       std::isdigit(static_cast<unsigned char>(text.back())) &&
                       text.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(text.begin(), text.end(), '.') <= 1;
  const double s = decimal ? std::strtod(v, nullptr) : 0;
  if (!decimal || s < 1 || s > 1e6) {
    throw std::invalid_argument("TUNEBENCH_HANG_TIMEOUT='" + text + "': expected seconds, a number from 1 to 1000000");
  }
  return s;
}

namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

struct Child {
  pid_t pid = -1;
  int err_fd = -1;
  std::string partial;  // stderr bytes after the last newline
  int tuned = 0, planned = 0;
  bool exited = false;
  int status = 0;
  double tuning_s = 0;  // the sum of the key times the shard reported
  double wall_s = 0;    // from the spawn to the exit
  std::string progress_file;  // "<benchmark>\t<activity>" as the shard last wrote it
  std::string progress;       // its last content seen
  std::chrono::steady_clock::time_point active_at;  // last sign of progress
  bool hung = false;
};

// Every config the shards will sweep, compiled here once on all cores before they start: N
// shards compiling the same configs would each spend the whole compile time on 1/N of them.
// `fitting[k]` holds the configs key k sweeps. Returns the number of configs handed to the ops.
std::size_t precompile_for(const std::vector<const Family*>& keys, const std::vector<std::vector<Config>>& fitting,
                           const RunContext& context) {
  std::vector<std::pair<const Op*, std::vector<Config>>> work;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const Op* op = keys[k]->op.get();
    auto it = std::find_if(work.begin(), work.end(), [&](const auto& w) { return w.first == op; });
    if (it == work.end()) it = work.insert(work.end(), {op, {}});
    for (const auto& c : fitting[k]) {
      if (std::find(it->second.begin(), it->second.end(), c) == it->second.end()) it->second.push_back(c);
    }
  }
  std::size_t total = 0;
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& [op, configs] : work) {
    try {
      op->precompile(configs, context.device, threads);
    } catch (const std::exception&) {
      // A config that does not compile is reported by the sweep that runs it.
    }
    total += configs.size();
  }
  return total;
}

std::string read_small(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& token,
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

void forward_lines(Child& c, int shard, const char* data, std::size_t n) {
  c.partial.append(data, n);
  std::size_t nl;
  while ((nl = c.partial.find('\n')) != std::string::npos) {
    const std::string line = c.partial.substr(0, nl);
    c.partial.erase(0, nl + 1);
    c.active_at = std::chrono::steady_clock::now();
    if (line.rfind("tunebench-shard: tuned ", 0) == 0) {
      ++c.tuned;
      // "... tuned NAME in SECONDS s"
      const auto in = line.rfind(" in ");
      if (in != std::string::npos) c.tuning_s += std::atof(line.c_str() + in + 4);
    }
    std::cerr << "[shard " << shard << "] " << line << "\n";
  }
}

}  // namespace

int warmup_gpus_from_env() {
  const char* v = std::getenv("PARALLEL_WARMUP_GPUS");
  if (!v || !*v) return 1;
  const std::string s(v);
  const bool digits = s.size() <= 4 && std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch); }) &&
                      !(s.size() > 1 && s[0] == '0');
  const long n = digits ? std::stol(s) : 0;
  if (!digits || n < 1) {
    throw std::invalid_argument(std::string("PARALLEL_WARMUP_GPUS='") + v +
                                "': expected the number of GPUs to shard the autotune sweep over, 1 to 9999");
  }
  return static_cast<int>(n);
}

std::vector<std::string> device_tokens(const char* visible, int device_count) {
  std::vector<std::string> tokens;
  if (!visible) {
    for (int i = 0; i < device_count; ++i) tokens.push_back(std::to_string(i));
    return tokens;
  }
  const std::string s(visible);
  std::size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    const auto comma = std::min(s.find(',', pos), s.size());
    std::string token = s.substr(pos, comma - pos);
    token.erase(0, token.find_first_not_of(' '));
    token.erase(token.find_last_not_of(' ') + 1);
    if (token.empty()) {
      throw std::invalid_argument("CUDA_VISIBLE_DEVICES='" + s + "': empty entry (expected comma-separated devices)");
    }
    tokens.push_back(token);
    pos = comma + 1;
  }
  return tokens;
}

std::vector<std::string> shard_devices(const std::vector<std::string>& tokens, int n, const char* visible) {
  if (n > static_cast<int>(tokens.size())) {
    const std::string asked = "PARALLEL_WARMUP_GPUS=" + std::to_string(n) + " but ";
    if (tokens.empty()) {
      throw std::invalid_argument(asked + "no CUDA device is visible (CUDA_VISIBLE_DEVICES is " +
                                  (visible ? "empty" : "unset, and no device was found") +
                                  "): expected at least " + std::to_string(n) + " GPUs to shard the sweep over");
    }
    throw std::invalid_argument(asked + "only " + std::to_string(tokens.size()) + " devices are visible (" +
                                (visible ? "CUDA_VISIBLE_DEVICES=" + std::string(visible)
                                         : std::string("CUDA_VISIBLE_DEVICES is unset: every device found")) +
                                ")");
  }
  const std::vector<std::string> devices(tokens.begin(), tokens.begin() + std::max(0, n));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        throw std::invalid_argument("CUDA_VISIBLE_DEVICES lists '" + devices[i] +
                                    "' twice: two shards would share one GPU");
      }
    }
  }
  return devices;
}

double sweep_cost_s(double flops, double bytes, int configs, const TuneOptions& options, double peak_flops,
                    double peak_bytes_per_s, double per_run_s, double per_config_s) {
  const double run = std::max(flops / peak_flops, bytes / peak_bytes_per_s) + per_run_s;
  const double budget = std::chrono::duration<double>(options.budget_per_config).count();
  const double reps = std::clamp(std::floor(budget / run), static_cast<double>(options.min_repetitions),
                                 static_cast<double>(options.max_repetitions));
  return std::max(1, configs) * ((options.warmup + reps) * run + per_config_s);
}

ShardPlan plan_shards(const std::vector<double>& costs, int n, double trust_share) {
  ShardPlan plan;
  plan.shards.resize(static_cast<std::size_t>(std::max(1, n)));
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(plan.shards.size(), 0.0);
  std::vector<std::size_t> first(costs.size());
  for (auto k : order) {
    const auto s = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    plan.shards[s].push_back(k);
    load[s] += costs[k];
    first[k] = s;
  }
  if (n < 2 || costs.empty() || trust_share <= 0) return plan;
  const auto doubled = std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(trust_share * costs.size())));
  // From the cheaper half, spread over it deterministically: a doubled key costs its sweep
  // twice, so doubling the costly keys would take the speedup of N shards well below N (10% of
  // keys spread over the whole range cost ~10% more sweep). Cheap keys are the short kernels,
  // where timing noise is largest, so the disagreement count stays a conservative figure.
  const std::size_t half = order.size() / 2;
  const std::size_t pool = order.size() - half;  // the cheaper half, and the middle key when odd
  const double step = static_cast<double>(pool) / static_cast<double>(std::min(doubled, pool));
  for (std::size_t i = 0; i < doubled && i < pool; ++i) {
    const auto k = order[half + static_cast<std::size_t>(static_cast<double>(i) * step)];
    std::size_t best = first[k] == 0 ? 1 : 0;
    for (std::size_t s = 0; s < load.size(); ++s) {
      if (s != first[k] && load[s] < load[best]) best = s;
    }
    plan.shards[best].push_back(k);
    load[best] += costs[k];
    plan.doubled.push_back(k);
  }
  return plan;
}

WarmupReport parallel_warmup(const std::vector<const Family*>& untuned, RunContext& context, int n,
                             const std::vector<std::string>& tokens, const std::string& exe,
                             const std::vector<std::string>& args, double trust_share) {
  const double hang_s = hang_timeout_s();  // checked before anything starts
  const std::vector<std::string> devices = shard_devices(tokens, n, std::getenv("CUDA_VISIBLE_DEVICES"));
  WarmupReport report;
  report.shards = n;
  // One family per cache key: the shards tune keys, not benchmarks.
  std::vector<const Family*> keys;
  std::set<cache::Key> seen;
  for (const Family* f : untuned) {
    if (seen.insert(cache_key(*f->op, f->shape, context)).second) keys.push_back(f);
  }
  report.keys = static_cast<int>(keys.size());
  if (keys.empty()) return report;

  std::vector<double> costs;
  std::vector<std::vector<Config>> fitting;  // per key: the configs its sweep runs
  for (const Family* f : keys) {
    auto& fits = fitting.emplace_back();
    for (const auto& c : f->op->config_space(context.tune.space)) {
      if (f->op->can_implement(c, f->shape, context.device)) fits.push_back(c);
    }
    // Effective rates, not peaks: what the ops reach in a sweep (GPU), or a host core (CPU op).
    const bool gpu = f->op->needs_gpu();
    costs.push_back(sweep_cost_s(f->op->flops(f->shape), f->op->bytes(f->shape), static_cast<int>(fits.size()),
                                 context.tune, gpu ? 200e12 : 2e10, gpu ? 2e12 : 1e10));
  }
  const ShardPlan plan = plan_shards(costs, n, trust_share);

  // The shards' lists, caches and progress files live under TMPDIR (else /tmp). Chosen here, not
  // by fs::temp_directory_path: it takes a variable that is set but empty as the folder "".
  const char* tmp_var = nullptr;
  for (const char* var : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    if (const char* v = std::getenv(var); v && *v) {
      tmp_var = var;
      break;
    }
  }
  const std::string tmp_name = tmp_var ? std::string(tmp_var) + "='" + std::getenv(tmp_var) + "'" : "/tmp";
  const fs::path tmp = tmp_var ? fs::path(std::getenv(tmp_var)) : fs::path("/tmp");
  std::error_code tmp_ec;
  const auto tmp_status = fs::status(tmp, tmp_ec);
  if (tmp_ec || !fs::is_directory(tmp_status)) {
    const std::string why = tmp_ec ? tmp_ec.message() : fs::exists(tmp_status) ? "not a folder" : "no such folder";
    throw std::invalid_argument(tmp_name + ": " + why + ", expected an existing folder for the sweep's scratch files");
  }
  std::string dir_template = (tmp / "tunebench-warmup-XXXXXX").string();
  if (!mkdtemp(dir_template.data())) {
    throw std::invalid_argument(tmp_name + ": cannot create " + dir_template + " (" + std::strerror(errno) +
                                "), expected a writable folder for the sweep's scratch files");
  }
  const fs::path dir = dir_template;
  // Removed however this function ends; only a SIGKILL of bench itself leaves it behind.
  struct Scratch {
    const fs::path& dir;
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } scratch{dir};
  const auto started = std::chrono::steady_clock::now();
  if (std::any_of(keys.begin(), keys.end(), [](const Family* f) { return f->op->needs_gpu(); })) {
    const std::size_t configs = precompile_for(keys, fitting, context);
    char line[160];
    std::snprintf(line, sizeof line, "bench: compiled %zu configs for the sweep in %.1f s, before the child processes\n",
                  configs, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    std::cerr << line;
  }

  struct sigaction act {}, old_int {}, old_term {};
  act.sa_handler = on_signal;
  sigemptyset(&act.sa_mask);
  g_signal = 0;
  sigaction(SIGINT, nullptr, &old_int);
  sigaction(SIGTERM, nullptr, &old_term);
  // A signal ignored on entry stays ignored (a background job of a non-interactive shell, nohup):
  // whoever started bench chose that it must not stop it.
  if (old_int.sa_handler != SIG_IGN) sigaction(SIGINT, &act, nullptr);
  if (old_term.sa_handler != SIG_IGN) sigaction(SIGTERM, &act, nullptr);
  // An error below must not leave Ctrl-C caught by a handler nobody reads any more.
  struct RestoreSignals {
    const struct sigaction &on_int, &on_term;
    ~RestoreSignals() {
      sigaction(SIGINT, &on_int, nullptr);
      sigaction(SIGTERM, &on_term, nullptr);
    }
  } restore_signals{old_int, old_term};

  std::vector<Child> children(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const fs::path list = dir / ("shard-" + std::to_string(i) + ".txt");
    {
      std::ofstream out(list);
      for (auto k : plan.shards[static_cast<std::size_t>(i)]) out << keys[k]->name << "\n";
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("parallel warmup: pipe failed");
    std::vector<std::string> child_args;
    for (const auto& a : args) {
      if (a.rfind("--tunebench_cache=", 0) != 0) child_args.push_back(a);  // the shard has its own
    }
    const std::string store = (dir / ("shard-" + std::to_string(i) + ".sqlite")).string();
    child_args.push_back("--tunebench_cache=" + store);
    if (context.cache) {
      // What is known of the shard's keys (failures above all: a config that left a sticky
      // error in an earlier round must not be tried again) goes with it.
      std::vector<cache::ConfigCache::Entry> known;
      for (auto k : plan.shards[static_cast<std::size_t>(i)]) {
        const auto key = cache_key(*keys[k]->op, keys[k]->shape, context);
        auto ms = context.cache->measurements(key);
        if (!ms.empty()) known.push_back({key, std::move(ms), std::nullopt});
      }
      if (!known.empty()) cache::ConfigCache(store).store(known);
    }
    child_args.push_back("--tunebench_shard=" + std::to_string(i) + ":" + list.string());
    children[static_cast<std::size_t>(i)].progress_file = list.string() + ".progress";
    children[static_cast<std::size_t>(i)].active_at = std::chrono::steady_clock::now();
    Child& c = children[static_cast<std::size_t>(i)];
    c.planned = static_cast<int>(plan.shards[static_cast<std::size_t>(i)].size());
    c.pid = spawn(exe, child_args, devices[static_cast<std::size_t>(i)], store, fds[1]);
    close(fds[1]);
    c.err_fd = fds[0];
  }

  const bool tty = isatty(STDERR_FILENO);
  bool terminating = false;
  auto terminate_at = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<int> owner;
    for (int i = 0; i < n; ++i) {
      if (children[i].err_fd >= 0) {
        fds.push_back({children[i].err_fd, POLLIN, 0});
        owner.push_back(i);
      }
    }
    if (!fds.empty()) poll(fds.data(), fds.size(), 100);
    for (std::size_t j = 0; j < fds.size(); ++j) {
      if (!(fds[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children[static_cast<std::size_t>(owner[j])];
      char buf[4096];
      const ssize_t got = read(c.err_fd, buf, sizeof buf);
      if (got > 0) {
        if (tty) std::cerr << "\r\033[K";
        forward_lines(c, owner[j], buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR)) {
        close(c.err_fd);
        c.err_fd = -1;
      }
    }
    bool all_done = true;
    for (auto& c : children) {
      if (!c.exited && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      }
      all_done &= c.exited && c.err_fd < 0;
    }
    if (all_done) break;
    const auto now = std::chrono::steady_clock::now();
    for (auto& c : children) {
      if (c.exited || c.hung) continue;
      if (std::string p = read_small(c.progress_file); p != c.progress) {
        c.progress = std::move(p);
        c.active_at = now;
      } else if (c.progress.find("\tprecompiling") != std::string::npos) {
        // Compiling a key's configs (minutes on a small host) runs no kernel: the watchdog
        // judges kernels, so the clock restarts when the timed runs begin.
        c.active_at = now;
      } else if (std::chrono::duration<double>(now - c.active_at).count() > hang_s) {
        c.hung = true;  // reported and recorded after the loop
        kill(c.pid, SIGKILL);
      }
    }
    if (g_signal && !terminating) {
      terminating = true;
      terminate_at = std::chrono::steady_clock::now();
      for (auto& c : children) {
        if (!c.exited) kill(c.pid, SIGTERM);
      }
    }
    if (terminating && std::chrono::steady_clock::now() - terminate_at > std::chrono::seconds(2)) {
      for (auto& c : children) {
        if (!c.exited) kill(c.pid, SIGKILL);
      }
    }
    if (tty && !terminating) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      int done = 0, total = 0;
      std::string per;
      for (int i = 0; i < n; ++i) {
        done += children[i].tuned;
        total += children[i].planned;
        per += " " + std::to_string(children[i].tuned) + "/" + std::to_string(children[i].planned);
      }
      const double eta = done > 0 ? elapsed * (total - done) / done : 0;
      // Sweeps, not keys: a doubled key is swept on two shards, so there are more sweeps than keys.
      std::fprintf(stderr, "\r\033[Kparallel warmup: %d/%d sweeps of %d keys (shards:%s) %.0f s, ETA %.0f s", done,
                   total, report.keys, per.c_str(), elapsed, eta);
    }
  }
  if (tty) std::cerr << "\r\033[K";
  for (int i = 0; i < n; ++i) {
    const Child& c = children[static_cast<std::size_t>(i)];
    report.tuned += c.tuned;
    report.per_shard.push_back({c.tuned, c.tuning_s, c.wall_s});
    if (g_signal) continue;  // stopped on purpose
    if (c.hung) {
      ++report.crashed_shards;
      const auto tab = c.progress.find('\t');
      const std::string name = c.progress.substr(0, tab);
      const std::string activity = tab == std::string::npos ? "" : c.progress.substr(tab + 1);
      std::cerr << "bench: WARNING: shard " << i << " (CUDA_VISIBLE_DEVICES=" << devices[i] << ") hung on "
                << (name.empty() ? std::string("its start-up") : name + " [" + activity + "]") << " for "
                << static_cast<long long>(hang_s) << " s without progress; killed after " << c.tuned << " of "
                << c.planned << " keys\n";
      // A config that hangs is a result: recorded as timeout, so no later round tries it again.
      const auto f = std::find_if(keys.begin(), keys.end(), [&](const Family* k) { return k->name == name; });
      if (f != keys.end() && context.cache && !activity.empty() && activity.rfind("precompiling", 0) != 0) {
        cache::Measurement m;
        m.config = activity;
        m.status = cache::Status::kTimeout;
        m.error = "no progress for " + std::to_string(static_cast<long long>(hang_s)) +
                  " s (hung); killed by the sweep's watchdog";
        m.device_uuid = "";
        context.cache->store(cache_key(*(*f)->op, (*f)->shape, context), {m}, std::nullopt);
      }
      continue;
    }
    if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
      ++report.crashed_shards;
      std::cerr << "bench: WARNING: shard " << i << " (CUDA_VISIBLE_DEVICES=" << devices[i] << ") "
                << describe_exit(c.status) << " after " << c.tuned << " of " << c.planned
                << " keys; the rest get another round in fresh processes, or are tuned before their timing loops\n";
    }
  }

  // Merge every shard's finished keys in one transaction, then settle disagreements.
  std::vector<cache::ConfigCache::Entry> merged;
  std::map<cache::Key, std::vector<std::string>> winners;  // best config per shard
  for (int i = 0; i < n; ++i) {
    const fs::path store = dir / ("shard-" + std::to_string(i) + ".sqlite");
    std::error_code ec;
    if (!fs::exists(store, ec)) continue;
    cache::ConfigCache shard(store);
    for (auto& e : shard.entries()) {
      if (e.best) winners[e.key].push_back(e.best->config);
      merged.push_back(std::move(e));
    }
  }
  if (context.cache && !merged.empty()) context.cache->store(merged);
  for (auto k : plan.doubled) {
    const auto it = winners.find(cache_key(*keys[k]->op, keys[k]->shape, context));
    if (it == winners.end() || it->second.size() < 2 || it->second[0] == it->second[1]) continue;
    report.disagreeing.push_back(keys[k]->name);
    if (g_signal) continue;
    TuneOptions retime = context.tune;
    retime.only = {Config::parse(it->second[0]), Config::parse(it->second[1])};
    try {
      ensure_tuned(*keys[k], context, &retime);
    } catch (const std::exception& e) {
      std::cerr << "bench: WARNING: re-timing the contenders of " << keys[k]->name << ": " << e.what() << "\n";
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);  // now: a re-raised signal below ends the process without unwinding
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (g_signal) {
    std::cerr << "bench: interrupted during the autotune sweep; " << report.tuned << " finished keys kept\n";
    raise(g_signal);
  }
  return report;
}

int run_shard(const std::vector<Family>& families, const RunContext& shared_context, int shard,
              const std::string& list_file) {
  // What this shard is doing, for the parent's watchdog: "<benchmark>\t<activity>", replaced
  // atomically at each step of the sweep.
  RunContext context = shared_context;
  std::string current;
  const std::string progress = list_file + ".progress";
  context.tune.on_progress = [&current, &progress](const std::string& activity) {
    const std::string tmp = progress + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << current << "\t" << activity << "\n";
    }
    std::rename(tmp.c_str(), progress.c_str());
  };
  std::ifstream in(list_file);
  if (!in) {
    std::cerr << "tunebench-shard: cannot read " << list_file << "\n";
    return 2;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  // The card's own UUID beside the token, so a run shows which physical GPU each shard swept on.
  std::cerr << "tunebench-shard: CUDA_VISIBLE_DEVICES=" << (visible ? visible : "(unset)")
            << (context.gpu_available && !context.device.uuid.empty() ? " (" + context.device.uuid + ")" : "") << "\n";
  // Fault injection for tests (TUNEBENCH_FAULT_INJECT): "abort-shard=I" makes shard I die after
  // its first key; "disagree-shard=I" makes shard I report as winner a config of the expanded
  // space outside the swept one, which no honest sweep of the other shard can pick.
  const char* fault = std::getenv("TUNEBENCH_FAULT_INJECT");
  const std::string me = std::to_string(shard);
  const bool abort_after_one = fault && std::string(fault) == "abort-shard=" + me;
  const bool disagree = fault && std::string(fault) == "disagree-shard=" + me;
  std::string name;
  char seconds[32];
  while (std::getline(in, name)) {
    const auto key_started = std::chrono::steady_clock::now();
    current = name;
    context.tune.on_progress("preparing");
    const auto it = std::find_if(families.begin(), families.end(), [&](const Family& f) { return f.name == name; });
    if (it == families.end()) {
      std::cerr << "tunebench-shard: unknown benchmark " << name << "\n";
      return 2;
    }
    try {
      ensure_tuned(*it, context);
    } catch (const StickyCudaError& e) {
      // The failing config is stored; this process's GPU context is gone. Stop: the parent
      // starts a fresh shard for the keys left.
      std::cerr << "tunebench-shard: " << name << ": " << e.what() << "\n";
      return 3;
    }
    try {
      if (disagree && context.cache) {
        const auto key = cache_key(*it->op, it->shape, context);
        const auto swept = it->op->config_space(context.tune.space);
        for (const auto& c : it->op->config_space(SpaceKind::kExpanded)) {
          if (std::find(swept.begin(), swept.end(), c) == swept.end() &&
              it->op->can_implement(c, it->shape, context.device)) {
            context.cache->store(key, {}, cache::Best{c.str(), 1, 0});
            break;
          }
        }
      }
    } catch (const std::exception& e) {
      std::cerr << "tunebench-shard: " << name << ": " << e.what() << "\n";
    }
    std::snprintf(seconds, sizeof seconds, "%.2f",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - key_started).count());
    std::cerr << "tunebench-shard: tuned " << name << " in " << seconds << " s\n";
    if (abort_after_one) std::abort();
  }
  return 0;
}

}  // namespace tunebench
