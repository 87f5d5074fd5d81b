// MpiExecutor and run_mpi_worker: the sweep over the ranks of an MPI job (docs/multi-node.md).
// Messages are JSON: WorkerRecord lines as the child writes them, and each key's cache entry.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include <cuda_runtime.h>

#include "common/plural.hpp"
#include "context/config_choice.hpp"
#include "sweep/child_start.hpp"
#include "sweep/compile_pool.hpp"
#include "sweep/mpi/mpi_child.hpp"
#include "sweep/mpi/mpi_executor.hpp"
#include "sweep/mpi/mpi_session.hpp"

namespace tunebench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr double kAliveEvery_s = 1.0;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const Family* family_named(const std::vector<Family>& families, const std::string& name) {
  const auto it = std::find_if(families.begin(), families.end(), [&](const Family& f) { return f.name == name; });
  return it == families.end() ? nullptr : &*it;
}

// What a rank's results depend on besides the key's shape: the fields of the cache key.
json fingerprint(const MpiSession& mpi, const RunContext& c, const std::vector<Family>& families) {
  int driver = 0;
  if (c.gpu_available) cudaDriverGetVersion(&driver);
  json j{{"host", mpi.host()},
         {"device", mpi.device()},
         {"uuid", c.gpu_available ? c.device.uuid : ""},
         {"gpu", c.gpu_available ? c.device.name : "none"},
         {"cc", c.gpu_available ? std::to_string(c.device.cc_major) + "." + std::to_string(c.device.cc_minor) : ""},
         {"driver", driver},
         {"toolkit", c.cuda_toolkit},
         {"cpu", c.host_name}};
  for (const auto& f : families) j["kernels"][f.op->name()] = f.op->kernel_version();
  return j;
}

// How `theirs` differs from rank 0's `ours` where it matters, "" when it does not.
std::string difference(const json& theirs, const json& ours, bool host_ops) {
  std::vector<std::string> fields{"gpu", "cc", "driver", "toolkit", "kernels"};
  if (host_ops) fields.push_back("cpu");
  for (const auto& f : fields) {
    if (theirs.value(f, json()) != ours.value(f, json())) {
      return f + " " + theirs.value(f, json()).dump() + ", rank 0's " + ours.value(f, json()).dump();
    }
  }
  return "";
}

std::string describe(const json& fp) {
  std::string d = fp.value("host", "") + (fp.value("device", "").empty() ? " (no GPU)" : " " + fp.value("device", ""));
  if (!fp.value("uuid", "").empty()) d += " (" + fp.value("uuid", "") + ")";
  return d;
}

// A rank's side of the sweep: keys from rank 0 into its child, records and results back.
class Worker {
 public:
  Worker(MpiSession& mpi, const std::vector<Family>& families, const RunContext& context, const Settings& settings,
         ChildLaunch launch, std::filesystem::path dir, CompilePool& pool)
      : mpi_(mpi),
        families_(families),
        context_(context),
        settings_(settings),
        launch_(std::move(launch)),
        dir_(std::move(dir)),
        pool_(pool) {}

  void run() {
    auto alive_at = Clock::now();
    heard_ = Clock::now();
    while (!caught_signal()) {
      while (auto m = mpi_.receive()) take(*m);
      pump();
      if (stopping_ && (!child_ || child_->in_flight().empty())) break;
      if (since(alive_at) > kAliveEvery_s) {
        mpi_.post(0, kAliveTag, "");
        alive_at = Clock::now();
      }
      if (since(heard_) > settings_.hang_timeout_s) {
        std::cerr << "bench: rank " << mpi_.rank() << ": nothing from rank 0 for "
                  << static_cast<long long>(settings_.hang_timeout_s) << " s; leaving the sweep\n";
        break;
      }
    }
    if (child_) child_->stop();
  }

 private:
  void take(const MpiSession::Message& m) {
    heard_ = Clock::now();
    if (m.tag != kWorkTag) return;
    const json j = json::parse(m.text);
    if (j.contains("stop")) {
      stopping_ = true;
      if (j.value("lost", false)) mpi_.lost_a_rank();
      if (child_) child_->close_input();
      return;
    }
    if (settings_.fault.kill_rank == mpi_.rank()) raise(SIGKILL);  // tests: a rank lost mid-key
    for (const auto& k : j.at("keys")) {
      const Family* f = family_named(families_, k.at("name").get<std::string>());
      if (!f) continue;
      std::vector<cache::Measurement> known;
      for (const auto& m2 : k.at("known")) known.push_back(measurement_from_json(m2));
      pool_.add(f->name, *f->op, fitting_configs(*f, context_));  // compiled here, while the child times
      if (!child_ || child_->exited()) {
        child_ = std::make_unique<RankChild>(dir_, generation_++, rank_child_devices(mpi_.device(), settings_),
                                             "rank " + std::to_string(mpi_.rank()), launch_);
      }
      child_->feed(*f, known, context_);
    }
  }

  void send_result(const std::string& name, bool done, const std::string& why) {
    const Family* f = family_named(families_, name);
    if (!f) return;
    // worker_s: the seconds this rank's children have run so far, for the sweep's busy figure.
    json r{{"key", name},
           {"done", done},
           {"entry", child_->result(*f, context_)},
           {"why", why},
           {"worker_s", ended_children_s_ + child_->wall_s()},
           {"compile_s", pool_.seconds()}};
    mpi_.post(0, kResultTag, r.dump());
  }

  void pump() {
    if (!child_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return;
    }
    for (const auto& r : child_->poll(50, settings_.hang_timeout_s, context_, families_)) {
      mpi_.post(0, kRecordTag, to_json_line(r));
      if (r.kind == WorkerRecord::Kind::kTuned) send_result(r.key, true, "");
    }
    if (!child_->exited()) return;
    const std::string why =
        child_->hung() ? "its child hung" : "its child ended with " + describe_exit(child_->status());
    for (const auto& name : child_->in_flight()) send_result(name, false, why);
    ended_children_s_ += child_->wall_s();
    child_.reset();
  }

  MpiSession& mpi_;
  const std::vector<Family>& families_;
  const RunContext& context_;
  const Settings& settings_;
  ChildLaunch launch_;
  std::filesystem::path dir_;
  CompilePool& pool_;
  std::unique_ptr<RankChild> child_;
  int generation_ = 0;
  double ended_children_s_ = 0;  // wall seconds of this rank's children that have exited
  bool stopping_ = false;
  Clock::time_point heard_;
};

// The cache this rank's bench names (rank 0's on a shared file system or one host): what its
// child finished is sent to rank 0 as it finishes, but if the job is killed a later run on this
// host merges the child's store into this file (clean_dead_scratch); empty when there is none.
std::filesystem::path rank_cache_file(const Settings& settings) {
  try {
    return config_cache_file(settings);
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

int run_mpi_worker(MpiSession& mpi, const std::vector<Family>& families, const RunContext& context,
                   const Settings& settings, ChildLaunch launch) {
  mpi.gather(fingerprint(mpi, context, families).dump());
  if (!mpi.scatter({})) return 0;  // refused: rank 0 said why
  Scratch scratch(settings, "tunebench-mpi-", rank_cache_file(settings));
  CatchSignals signals;
  {
    const auto pool = sweep_compile_pool(scratch.dir(), context.device, settings.fault.slow_compile_s);
    Worker(mpi, families, context, settings, std::move(launch), scratch.dir(), *pool).run();
  }
  scratch.remove();
  signals.restore();
  if (const int sig = caught_signal()) raise(sig);
  return 0;
}

MpiExecutor::MpiExecutor(MpiSession& mpi, const std::vector<const Family*>& untuned, const RunContext& context,
                         const std::vector<Family>& families, ChildLaunch launch, const Settings& settings)
    : mpi_(mpi), families_(families), launch_(std::move(launch)), settings_(settings) {
  const auto all = mpi.gather(fingerprint(mpi, context, families).dump());
  const bool host_ops =
      std::any_of(untuned.begin(), untuned.end(), [](const Family* f) { return !f->op->needs_gpu(); });
  const json ours = json::parse(all.at(0));
  std::vector<int> flags;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const json theirs = json::parse(all[r]);
    rank_devices_.push_back(describe(theirs));
    const std::string why = difference(theirs, ours, host_ops);
    flags.push_back(why.empty() ? 1 : 0);
    accepted_.push_back(why.empty());
    if (why.empty()) continue;
    refused_.push_back(static_cast<int>(r));
    std::cerr << "bench: WARNING: rank " << r << " (" << rank_devices_.back() << ") refused: its " << why
              << "; its results would be filed under rank 0's keys, so it sweeps nothing\n";
  }
  mpi.scatter(flags);
}

}  // namespace tunebench
