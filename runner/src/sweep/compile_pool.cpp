#include "sweep/compile_pool.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tunebench {

namespace fs = std::filesystem;

fs::path compiled_keys_file(const fs::path& dir) { return dir / "compiled.keys"; }

std::string compiled_config_line(const std::string& op, const std::string& config) { return "\t" + op + "\t" + config; }

CompiledKeysWriter::CompiledKeysWriter(const fs::path& file)
    : fd_(open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) {
  if (fd_ < 0) throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
}

CompiledKeysWriter::~CompiledKeysWriter() {
  if (fd_ >= 0) close(fd_);
}

void CompiledKeysWriter::announce(const std::string& name) {
  const std::string line = name + "\n";
  // A short write cannot happen on a local file short of a full disk; a worker waiting for the
  // name then waits until the sweep ends it, which the watchdog's message names.
  while (write(fd_, line.data(), line.size()) < 0 && errno == EINTR) {
  }
}

CompiledKeys::CompiledKeys(fs::path file) : file_(std::move(file)) {
  std::error_code ec;
  active_ = fs::exists(file_, ec);
}

bool CompiledKeys::announced(const std::string& name) {
  if (!active_ || names_.count(name)) return true;
  if (std::FILE* f = std::fopen(file_.c_str(), "r")) {
    if (std::fseek(f, offset_, SEEK_SET) == 0) {
      char buf[4096];
      for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) {
        partial_.append(buf, got);
        offset_ += static_cast<long>(got);
      }
    }
    std::fclose(f);
  }
  for (std::size_t nl; (nl = partial_.find('\n')) != std::string::npos; partial_.erase(0, nl + 1)) {
    names_.insert(partial_.substr(0, nl));
  }
  return names_.count(name) > 0;
}

double CompiledKeys::wait_for(const std::string& name, const std::function<void()>& on_wait) {
  if (announced(name)) return 0;
  const auto started = std::chrono::steady_clock::now();
  on_wait();
  while (!announced(name)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

double CompiledKeys::wait_for_config(const std::string& op, const std::string& config, const std::string& key,
                                     const std::function<void()>& on_wait) {
  const std::string line = compiled_config_line(op, config);
  if (announced(line) || announced(key)) return 0;
  const auto started = std::chrono::steady_clock::now();
  on_wait();
  while (!announced(line) && !announced(key)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

CompilePool::CompilePool(DeviceInfo device, int threads, std::function<void(const std::string&)> on_compiled,
                         fs::path host_cores, std::function<void(const Op&, const Config&)> on_config_compiled)
    : device_(std::move(device)),
      on_compiled_(std::move(on_compiled)),
      on_config_compiled_(std::move(on_config_compiled)) {
  if (!host_cores.empty()) cores_ = std::make_unique<HostCores>(host_cores);
  const int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int t = 0; t < n; ++t) threads_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() { stop(); }

void CompilePool::add(const std::string& name, const Op& op, const std::vector<Config>& configs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return;
  const bool idle = done_count_ == items_.size();
  Key key{name, 0};
  const std::size_t k = keys_.size();
  for (const auto& c : configs) {
    const auto [at, added] = index_.try_emplace({&op, c.str()}, items_.size());
    if (added) {
      items_.push_back({&op, c});
      done_.push_back(false);
      waiting_.emplace_back();
    }
    if (!done_[at->second]) {
      waiting_[at->second].push_back(k);
      ++key.left;
    }
  }
  if (idle && items_.size() > done_count_) busy_since_ = Clock::now();
  keys_.push_back(std::move(key));
  if (keys_.back().left == 0) announce(k);
  changed_.notify_all();
}

void CompilePool::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return stopping_ || announced_ == keys_.size(); });
}

void CompilePool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (items_.size() > done_count_ && busy_since_ != Clock::time_point{}) {
    busy_s_ += std::chrono::duration<double>(Clock::now() - busy_since_).count();
    busy_since_ = {};
  }
  held_.reset();
}

std::size_t CompilePool::compiled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_count_;
}

double CompilePool::seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_seconds();
}

double CompilePool::busy_seconds() const {
  if (items_.size() == done_count_ || busy_since_ == Clock::time_point{}) return busy_s_;
  return busy_s_ + std::chrono::duration<double>(Clock::now() - busy_since_).count();
}

// Under mutex_: key k has all of its configs compiled.
void CompilePool::announce(std::size_t k) {
  ++announced_;
  if (on_compiled_) on_compiled_(keys_[k].name);
}

// Under `lock`: false when the pool is stopping; else true once this pool holds the host's
// cores (or needs not), or has nothing left to begin (then it asks for none: a thread that
// waited here while another compiled the last config and let the cores go must not take them
// back for nothing). One thread asks (polling, so that stop() is never kept waiting by a shard
// timing a host op); the others wait for it.
bool CompilePool::hold_cores(std::unique_lock<std::mutex>& lock) {
  while (!stopping_ && cores_ && !held_ && next_ < items_.size()) {
    if (acquiring_) {
      changed_.wait(lock);
      continue;
    }
    acquiring_ = true;
    lock.unlock();
    auto held = cores_->try_hold();
    if (!held) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lock.lock();
    acquiring_ = false;
    // Nothing is compiled without the cores, so the work that sent this thread is still there.
    held_ = std::move(held);
    changed_.notify_all();
  }
  return !stopping_;
}

void CompilePool::work() {
  // Below the workers: a compile thread yields its core to a worker's launches.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || next_ < items_.size(); });
    if (!hold_cores(lock)) return;
    if (next_ >= items_.size()) continue;
    const std::size_t i = next_++;
    const Item item = items_[i];
    lock.unlock();
    try {
      item.op->precompile({item.config}, device_, 1);
    } catch (...) {
      // The sweep that runs the config compiles it again and reports the failure.
    }
    lock.lock();
    done_[i] = true;
    ++done_count_;
    if (on_config_compiled_) on_config_compiled_(*item.op, item.config);
    // Keys in the order added among those this config completes.
    for (const std::size_t k : waiting_[i]) {
      if (--keys_[k].left == 0) announce(k);
    }
    waiting_[i].clear();
    if (done_count_ == items_.size()) {
      busy_s_ += std::chrono::duration<double>(Clock::now() - busy_since_).count();
      busy_since_ = {};
      held_.reset();  // nothing queued: a shard may tune a host op
    }
    changed_.notify_all();
  }
}

std::unique_ptr<CompilePool> sweep_compile_pool(const fs::path& dir, const DeviceInfo& device, int late_s) {
  auto writer = std::make_shared<CompiledKeysWriter>(compiled_keys_file(dir));
  auto announce = [writer, late_s](const std::string& name) {
    if (late_s > 0) std::this_thread::sleep_for(std::chrono::seconds(late_s));
    writer->announce(name);
  };
  std::function<void(const Op&, const Config&)> announce_config;
  if (late_s == 0) {
    announce_config = [writer](const Op& op, const Config& config) {
      writer->announce(compiled_config_line(op.name(), config.str()));
    };
  }
  return std::make_unique<CompilePool>(device, 0, std::move(announce), host_cores_file(dir),
                                       std::move(announce_config));
}

}  // namespace tunebench
