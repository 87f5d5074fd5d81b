// RankChild: an MPI rank's sweep child, fed keys through a FIFO.

#include "sweep/mpi/mpi_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "context/config_choice.hpp"
#include "sweep/child_start.hpp"

namespace tunebench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

nlohmann::json opt(const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::optional<std::int64_t> opt_of(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::int64_t>();
}

}  // namespace

nlohmann::json measurement_json(const cache::Measurement& m) {
  return {{"config", m.config},
          {"status", std::string(cache::to_string(m.status))},
          {"p20_ns", opt(m.p20_ns)},
          {"p50_ns", opt(m.p50_ns)},
          {"p80_ns", opt(m.p80_ns)},
          {"error", m.error},
          {"measured_at", m.measured_at},
          {"device_uuid", m.device_uuid},
          {"host", m.host}};
}

cache::Measurement measurement_from_json(const nlohmann::json& j) {
  cache::Measurement m;
  m.config = j.at("config").get<std::string>();
  try {
    m.status = cache::status_from_string(j.at("status").get<std::string>());
  } catch (const std::invalid_argument&) {
    m.status = cache::Status::kUnsupported;
  }
  m.p20_ns = opt_of(j.at("p20_ns"));
  m.p50_ns = opt_of(j.at("p50_ns"));
  m.p80_ns = opt_of(j.at("p80_ns"));
  m.error = j.at("error").get<std::string>();
  m.measured_at = j.at("measured_at").get<std::int64_t>();
  m.device_uuid = j.at("device_uuid").get<std::string>();
  m.host = j.value("host", std::string());
  return m;
}

nlohmann::json entry_json(const std::vector<cache::Measurement>& ms, const std::optional<cache::Best>& best) {
  nlohmann::json j;
  j["measurements"] = nlohmann::json::array();
  for (const auto& m : ms) j["measurements"].push_back(measurement_json(m));
  j["best"] = best
                  ? nlohmann::json{{"config", best->config}, {"p50_ns", best->p50_ns}, {"updated_at", best->updated_at}}
                  : nlohmann::json(nullptr);
  return j;
}

cache::ConfigCache::Entry entry_from_json(const nlohmann::json& j, const cache::Key& key) {
  cache::ConfigCache::Entry e{key, {}, std::nullopt};
  for (const auto& m : j.at("measurements")) e.results.push_back(measurement_from_json(m));
  if (const auto& b = j.at("best"); !b.is_null()) {
    e.best = cache::Best{b.at("config").get<std::string>(), b.at("p50_ns").get<std::int64_t>(),
                         b.at("updated_at").get<std::int64_t>()};
  }
  return e;
}

std::string rank_child_devices(const std::string& rank_device, const Settings& settings) {
  return rank_device.empty() ? settings.visible_devices.value_or("") : rank_device;
}

RankChild::RankChild(fs::path dir, int generation, std::string device, std::string label, ChildLaunch launch)
    : dir_(std::move(dir)), device_(std::move(device)), label_(std::move(label)), launch_(std::move(launch)) {
  list_ = dir_ / ("child-" + std::to_string(generation) + ".keys");
  store_ = dir_ / ("child-" + std::to_string(generation) + ".sqlite");
}

RankChild::~RankChild() { stop(); }

// A FIFO for its keys: the child's run_shard reads it as its list, line by line, up to the end
// this process gives it by closing its end. Opened read-write here, so neither side blocks in
// open() whichever comes first.
void RankChild::start() {
  if (mkfifo(list_.c_str(), 0600) != 0)
    throw std::runtime_error("sweep: cannot make " + list_.string() + ": " + std::strerror(errno));
  feed_fd_ = open(list_.c_str(), O_RDWR | O_CLOEXEC);
  if (feed_fd_ < 0) throw std::runtime_error("sweep: cannot open " + list_.string() + ": " + std::strerror(errno));
  std::vector<std::string> args;
  for (const auto& a : launch_.args) {
    if (a.rfind("--tunebench_cache=", 0) != 0) args.push_back(a);
  }
  args.push_back("--tunebench_cache=" + store_.string());
  args.push_back("--tunebench_shard=0:" + list_.string());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("sweep: pipe failed");
  records_ = std::make_unique<RecordReader>(list_.string() + ".records");
  cache::ConfigCache{store_};  // made before the child opens it, so seeding never races its creation
  pid_ = spawn_child(launch_.exe, args, device_, store_.string(), fds[1]);
  close(fds[1]);
  err_fd_ = fds[0];
  started_at_ = active_at_ = Clock::now();
}

void RankChild::feed(const Family& f, const std::vector<cache::Measurement>& known, const RunContext& context) {
  if (pid_ < 0) start();
  if (!known.empty()) cache::ConfigCache(store_).store(cache_key(*f.op, f.shape, context), known, std::nullopt);
  const std::string line = f.name + "\n";
  if (write(feed_fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error("sweep: cannot hand " + f.name + " to the child of " + label_);
  }
  in_flight_.push_back(f.name);
  if (in_flight_.size() == 1) active_at_ = Clock::now();
}

void RankChild::read_stderr(int wait_ms) {
  if (err_fd_ < 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return;
  }
  pollfd p{err_fd_, POLLIN, 0};
  if (::poll(&p, 1, wait_ms) <= 0) return;
  char buf[4096];
  const ssize_t got = read(err_fd_, buf, sizeof buf);
  if (got <= 0) {
    if (got == 0 || errno != EINTR) {
      close(err_fd_);
      err_fd_ = -1;
    }
    return;
  }
  partial_.append(buf, static_cast<std::size_t>(got));
  for (std::size_t nl; (nl = partial_.find('\n')) != std::string::npos; partial_.erase(0, nl + 1)) {
    std::cerr << "[" << label_ << "] " << partial_.substr(0, nl) << "\n";
  }
}

std::vector<WorkerRecord> RankChild::poll(int wait_ms, double hang_s, const RunContext& context,
                                          const std::vector<Family>& families) {
  read_stderr(wait_ms);
  if (pid_ < 0) return {};
  auto got = records_->poll();
  for (const auto& r : got) {
    active_at_ = Clock::now();
    if (r.kind == WorkerRecord::Kind::kTuned) {
      in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), r.key), in_flight_.end());
    } else if (r.kind != WorkerRecord::Kind::kStarted) {
      last_ = r;
    }
  }
  if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) {
    exited_ = true;
    ended_at_ = Clock::now();
    for (auto& r : records_->poll()) got.push_back(std::move(r));
  }
  const bool waiting = last_.kind == WorkerRecord::Kind::kCompiling || last_.kind == WorkerRecord::Kind::kWaiting;
  if (exited_ || hung_ || in_flight_.empty() || waiting) {
    if (waiting) active_at_ = Clock::now();
    return got;
  }
  if (since(active_at_) > hang_s) {
    hung_ = true;
    kill(pid_, SIGKILL);
    std::cerr << "bench: WARNING: " << label_ << ": its sweep child hung on " << last_.key << " [" << last_.config
              << "] for " << static_cast<long long>(hang_s) << " s without progress; killed\n";
    const auto f = std::find_if(families.begin(), families.end(), [&](const Family& x) { return x.name == last_.key; });
    if (f != families.end() && last_.kind == WorkerRecord::Kind::kTiming) {
      try {
        Config::parse(last_.config);
        cache::Measurement m;
        m.config = last_.config;
        m.status = cache::Status::kTimeout;
        m.error = "no progress for " + std::to_string(static_cast<long long>(hang_s)) +
                  " s (hung); killed by the sweep's watchdog";
        cache::ConfigCache(store_).store(cache_key(*f->op, f->shape, context), {m}, std::nullopt);
      } catch (const std::exception&) {
        // An interleaved round of several configs: which one hung cannot be said.
      }
    }
  }
  return got;
}

nlohmann::json RankChild::result(const Family& f, const RunContext& context) {
  cache::ConfigCache store(store_);
  const auto key = cache_key(*f.op, f.shape, context);
  return entry_json(store.measurements(key), store.best(key));
}

void RankChild::close_input() {
  if (feed_fd_ >= 0) close(feed_fd_);
  feed_fd_ = -1;
}

void RankChild::stop() {
  close_input();
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGTERM);
    const auto asked = Clock::now();
    while (waitpid(pid_, &status_, WNOHANG) != pid_) {
      if (since(asked) > 2) kill(pid_, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    exited_ = true;
    ended_at_ = Clock::now();
  }
  if (err_fd_ >= 0) close(err_fd_);
  err_fd_ = -1;
}

double RankChild::wall_s() const {
  if (pid_ < 0) return 0;
  return std::chrono::duration<double>((exited_ ? ended_at_ : Clock::now()) - started_at_).count();
}

}  // namespace tunebench
