// MpiExecutor::sweep: rank 0's queue of keys, handed to the ranks as they finish them.

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "common/c_numbers.hpp"
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

constexpr std::size_t kInFlight = 2;  // one sweeping, one waiting: no rank idles between keys
constexpr int kAttempts = 3;          // children a key may end before it is left to a later round
constexpr double kAliveEvery_s = 1.0;
constexpr double kFlushEvery_s = 1.0;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A rank as rank 0 sees it: what it has in flight and what it did.
struct Slot {
  int rank = 0;
  bool live = true;
  std::vector<std::size_t> in_flight;
  Clock::time_point heard = Clock::now();
  SweepReport::Shard figures;
  double compile_s = 0;  // its compile pool's seconds, as of its last result
};

class Coordinator {
 public:
  Coordinator(MpiSession& mpi, const SweepKeys& k, const RunContext& context, ChoiceLog& choices,
              const std::vector<Family>& families, const Settings& settings, SweepReport& report, CompilePool& pool)
      : mpi_(mpi),
        k_(k),
        context_(context),
        choices_(choices),
        families_(families),
        settings_(settings),
        report_(report),
        pool_(pool),
        attempts_(k.keys.size(), 0),
        done_(k.keys.size(), false),
        on_rank_(k.keys.size(), -1),
        finalists_(k.keys.size()),
        best_(k.keys.size()) {
    std::vector<std::size_t> order(k.keys.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return k.costs[a] > k.costs[b]; });
    queue_.assign(order.begin(), order.end());
  }

  std::vector<Slot> slots;
  std::unique_ptr<RankChild> local;
  json log = json::array();
  std::vector<int> lost;

  void run(const std::filesystem::path& dir, const ChildLaunch& launch) {
    auto alive_at = Clock::now();
    while (!caught_signal() && !finished()) {
      assign(dir, launch);
      while (auto m = mpi_.receive()) take(*m);
      pump_local();
      check_lost();
      flush(false);
      if (since(alive_at) > kAliveEvery_s) {
        for (const auto& s : slots) {
          if (s.live && s.rank != 0) mpi_.post(s.rank, kAliveTag, "");
        }
        alive_at = Clock::now();
      }
    }
    if (local) local->stop();
    if (local) slots[0].figures.wall_s += local->wall_s();
    flush(true);
  }

  void stop_workers() {
    for (const auto& s : slots) {
      // "lost": the ranks leave MPI without its closing fence, which would wait for the lost one.
      if (s.live && s.rank != 0) mpi_.post(s.rank, kWorkTag, json{{"stop", true}, {"lost", !lost.empty()}}.dump());
    }
  }

  // Keys swept on another GPU (another host, for host ops) than this process's: their
  // finalists re-timed here, as the one-host sweep does for its other shards.
  void retime_elsewhere(const std::vector<std::string>& rank_devices) {
    const std::string host0 = rank_devices.empty() ? "" : rank_devices[0].substr(0, rank_devices[0].find(' '));
    for (std::size_t i = 0; i < k_.keys.size() && !caught_signal(); ++i) {
      const int r = on_rank_[i];
      if (!done_[i] || r <= 0 || finalists_[i].size() < 2) continue;
      const std::string host =
          rank_devices[static_cast<std::size_t>(r)].substr(0, rank_devices[static_cast<std::size_t>(r)].find(' '));
      if (!k_.keys[i]->op->needs_gpu() && host == host0) continue;
      std::vector<Config> contenders;
      for (const auto& t : finalists_[i]) contenders.push_back(Config::parse(t));
      ++report_.retimed;
      try {
        const Config winner = retime_finalists(*k_.keys[i], contenders, context_, choices_, report_, log);
        if (winner.str() != best_[i]) ++report_.changed;
      } catch (const std::exception& e) {
        std::cerr << "bench: WARNING: re-timing the finalists of " << k_.keys[i]->name
                  << " on rank 0's GPU: " << e.what() << "\n";
      }
    }
  }

 private:
  bool finished() const {
    if (!queue_.empty()) return false;
    return std::all_of(slots.begin(), slots.end(), [](const Slot& s) { return !s.live || s.in_flight.empty(); });
  }

  // Breadth first: every rank gets a key before any gets its second, so few keys still spread.
  void assign(const std::filesystem::path& dir, const ChildLaunch& launch) {
    for (std::size_t depth = 1; depth <= kInFlight; ++depth) {
      for (auto& s : slots) assign_to(s, depth, dir, launch);
    }
  }

  void assign_to(Slot& s, std::size_t depth, const std::filesystem::path& dir, const ChildLaunch& launch) {
    {
      while (s.live && s.in_flight.size() < depth && !queue_.empty()) {
        const std::size_t i = queue_.front();
        queue_.pop_front();
        s.in_flight.push_back(i);
        const Family& f = *k_.keys[i];
        const auto known = context_.cache->measurements(cache_key(*f.op, f.shape, context_));
        if (s.rank == 0) {
          pool_.add(f.name, *f.op, k_.fitting[i]);  // before its child may wait for it
          if (!local || local->exited()) {
            local = std::make_unique<RankChild>(dir, generation_++, rank_child_devices(mpi_.device(), settings_),
                                                "rank 0", launch);
          }
          local->feed(f, known, context_);
          continue;
        }
        json key{{"name", f.name}, {"known", json::array()}};
        for (const auto& m : known) key["known"].push_back(measurement_json(m));
        mpi_.post(s.rank, kWorkTag, json{{"keys", json::array({key})}}.dump());
      }
    }
  }

  std::optional<std::size_t> index_of(const std::string& name) const {
    for (std::size_t i = 0; i < k_.keys.size(); ++i) {
      if (k_.keys[i]->name == name) return i;
    }
    return std::nullopt;
  }

  void record(Slot& s, WorkerRecord r) {
    if (r.kind == WorkerRecord::Kind::kTuned) {
      s.figures.tuning_s += r.seconds;
      report_.runs += r.runs;
      report_.kernel_s += r.kernel_s;
      report_.dropped += r.dropped;
      report_.pruned += r.pruned;
      report_.compile_exposed_s += r.compile_wait_s;
      if (const auto i = index_of(r.key)) finalists_[*i] = r.finalists;
    } else if (r.kind == WorkerRecord::Kind::kStarted && s.figures.device.empty()) {
      s.figures.device = r.device;
    }
    auto j = json::parse(to_json_line(r));
    j["worker"] = "rank " + std::to_string(s.rank);
    j["host"] = s.rank < static_cast<int>(hosts.size()) ? hosts[static_cast<std::size_t>(s.rank)] : "";
    j["round"] = round;
    log.push_back(j);
  }

  void result(Slot& s, const json& j) {
    const auto i = index_of(j.at("key").get<std::string>());
    if (!i) return;
    s.in_flight.erase(std::remove(s.in_flight.begin(), s.in_flight.end(), *i), s.in_flight.end());
    if (j.contains("worker_s")) s.figures.wall_s = std::max(s.figures.wall_s, j.at("worker_s").get<double>());
    if (j.contains("compile_s")) s.compile_s = std::max(s.compile_s, j.at("compile_s").get<double>());
    const Family& f = *k_.keys[*i];
    auto entry = entry_from_json(j.at("entry"), cache_key(*f.op, f.shape, context_));
    if (j.at("done").get<bool>() && entry.best) {
      done_[*i] = true;
      on_rank_[*i] = s.rank;
      best_[*i] = entry.best->config;
      ++s.figures.keys;
      ++report_.tuned;
    } else {
      ++report_.crashed_shards;
      const bool again = ++attempts_[*i] < kAttempts;
      std::cerr << "bench: WARNING: rank " << s.rank << " did not finish " << f.name << " ("
                << j.value("why", std::string("no winner")) << "); "
                << (again ? "it goes back to the queue" : "left to a later round") << "\n";
      if (again) queue_.push_front(*i);
    }
    pending_.push_back(std::move(entry));
  }

  void take(const MpiSession::Message& m) {
    auto s = std::find_if(slots.begin(), slots.end(), [&](const Slot& x) { return x.rank == m.from; });
    if (s == slots.end() || !s->live) return;
    s->heard = Clock::now();
    if (m.tag == kRecordTag) {
      if (auto r = parse_record_line(m.text)) record(*s, std::move(*r));
    } else if (m.tag == kResultTag) {
      result(*s, json::parse(m.text));
    }
  }

  void pump_local() {
    if (!local) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return;
    }
    Slot& s = slots[0];
    for (auto& r : local->poll(20, settings_.hang_timeout_s, context_, families_)) {
      const bool tuned = r.kind == WorkerRecord::Kind::kTuned;
      const std::string key = r.key;
      record(s, std::move(r));
      if (tuned) result(s, json{{"key", key}, {"done", true}, {"entry", local_result(key)}});
    }
    if (!local->exited()) return;
    const std::string why = local->hung() ? "its child hung" : "its child ended with " + describe_exit(local->status());
    for (const auto i : std::vector<std::size_t>(s.in_flight)) {
      result(s,
             json{{"key", k_.keys[i]->name}, {"done", false}, {"entry", local_result(k_.keys[i]->name)}, {"why", why}});
    }
    s.figures.wall_s += local->wall_s();
    local.reset();
  }

  json local_result(const std::string& name) {
    const auto i = index_of(name);
    return local->result(*k_.keys[*i], context_);
  }

  // A rank silent (no record, result or heartbeat) for the hang timeout is lost: dead, hung,
  // or cut off. Its keys go back to the queue, to the front: they were the largest left.
  void check_lost() {
    for (auto& s : slots) {
      if (!s.live || s.rank == 0 || since(s.heard) <= settings_.hang_timeout_s) continue;
      s.live = false;
      lost.push_back(s.rank);
      mpi_.forget(s.rank);
      mpi_.lost_a_rank();
      std::cerr << "bench: WARNING: rank " << s.rank << " silent for "
                << static_cast<long long>(settings_.hang_timeout_s) << " s: counted lost; "
                << count_of(static_cast<long long>(s.in_flight.size()), "key", "keys")
                << " it had go to the other ranks\n";
      ++report_.crashed_shards;
      for (auto it = s.in_flight.rbegin(); it != s.in_flight.rend(); ++it) queue_.push_front(*it);
      s.in_flight.clear();
    }
  }

  // One transaction per batch: what arrived since the last one, at most once a second.
  void flush(bool force) {
    if (pending_.empty() || (!force && since(flushed_at_) < kFlushEvery_s)) return;
    try {
      context_.cache->store(pending_);
    } catch (const cache::SqliteError& e) {
      if (!cache::is_busy(e.code())) throw;
      for (const auto& entry : pending_) {
        if (entry.best) choices_.keep_unstored(entry.key, Config::parse(entry.best->config));
      }
      std::cerr << "bench: WARNING: the sweep's results were not stored in " << context_.cache->path().string() << " ("
                << e.what() << "); " << count_of(static_cast<long long>(pending_.size()), "key", "keys")
                << " kept for this run only\n";
    }
    pending_.clear();
    flushed_at_ = Clock::now();
  }

 public:
  std::vector<std::string> hosts;
  int round = 1;

 private:
  MpiSession& mpi_;
  const SweepKeys& k_;
  const RunContext& context_;
  ChoiceLog& choices_;
  const std::vector<Family>& families_;
  const Settings& settings_;
  SweepReport& report_;
  CompilePool& pool_;  // rank 0's: compiles the keys its own child is handed
  std::deque<std::size_t> queue_;
  std::vector<int> attempts_;
  std::vector<bool> done_;
  std::vector<int> on_rank_;
  std::vector<std::vector<std::string>> finalists_;
  std::vector<std::string> best_;
  std::vector<cache::ConfigCache::Entry> pending_;
  Clock::time_point flushed_at_ = Clock::now();
  int generation_ = 0;
};

}  // namespace

SweepReport MpiExecutor::sweep(const std::vector<const Family*>& untuned, const RunContext& context, ChoiceLog& choices,
                               bool) {
  SweepReport report;
  const SweepKeys k = sweep_keys(untuned, context);
  report.keys = static_cast<int>(k.keys.size());
  // The owner file names rank 0's cache: a later run merges what this rank's child finished into
  // it if this process is killed (clean_dead_scratch).
  Scratch scratch(settings_, "tunebench-mpi-", context.cache ? context.cache->path() : std::filesystem::path());
  CatchSignals signals;
  const auto started = Clock::now();
  const auto pool = sweep_compile_pool(scratch.dir(), context.device, settings_.fault.slow_compile_s);
  Coordinator c(mpi_, k, context, choices, families_, settings_, report, *pool);
  c.round = ++rounds_;
  for (int r = 0; r < mpi_.size(); ++r) {
    const bool live = accepted_[static_cast<std::size_t>(r)] && (r == 0 || !workers_stopped_) &&
                      std::find(lost_.begin(), lost_.end(), r) == lost_.end();
    c.slots.push_back({r, live, {}, Clock::now(), {}});
    c.hosts.push_back(
        rank_devices_[static_cast<std::size_t>(r)].substr(0, rank_devices_[static_cast<std::size_t>(r)].find(' ')));
  }
  report.shards = static_cast<int>(std::count_if(c.slots.begin(), c.slots.end(), [](const Slot& s) { return s.live; }));
  c.run(scratch.dir(), launch_);
  pool->stop();
  report.compile_s = pool->seconds();
  for (const auto& s : c.slots) report.compile_s += s.rank != 0 ? s.compile_s : 0;
  if (!workers_stopped_) c.stop_workers();
  workers_stopped_ = true;
  lost_.insert(lost_.end(), c.lost.begin(), c.lost.end());
  if (!caught_signal()) c.retime_elsewhere(rank_devices_);
  // Worker seconds: rank 0's own child as it ran, the other ranks' children as of their last
  // result (their idle wait for the stop after it is not worker time).
  for (auto& s : c.slots) {
    if (s.figures.device.empty()) s.figures.device = rank_devices_[static_cast<std::size_t>(s.rank)];
    report.per_shard.push_back(s.figures);
    report.worker_s += s.figures.wall_s;
  }
  if (!context.run_dir.empty()) {
    std::ofstream out(context.run_dir / "sweep.jsonl", std::ios::app);
    for (const auto& j : c.log) out << j.dump() << "\n";
  }
  scratch.remove();
  report.seconds = since(started);
  signals.restore();
  if (const int sig = caught_signal()) {
    std::cerr << "bench: interrupted during the MPI sweep; " << count_of(report.tuned, "finished key", "finished keys")
              << " kept"
              << (context.run_dir.empty() ? "" : "; the run directory " + context.run_dir.string() + " stays 'running'")
              << "\n";
    report.interrupted_by = sig;
  }
  return report;
}

std::string MpiExecutor::summary(const SweepReport& w) const {
  return sharded_summary(name(), w, {"rank", "ranks", "worker", "workers", "MPI sweep rank"});
}

std::vector<ContextEntry> MpiExecutor::context_entries(const SweepReport& w) const {
  const auto list = [](const std::vector<int>& ranks) {
    std::string out;
    for (const int r : ranks) out += (out.empty() ? "" : " ") + std::to_string(r);
    return out;
  };
  std::string devices;
  for (std::size_t i = 0; i < rank_devices_.size(); ++i) {
    devices += (i ? ", " : "") + std::to_string(i) + "=" + rank_devices_[i];
  }
  return {{"mpi_ranks", std::to_string(rank_devices_.size())},
          {"mpi_rank_devices", devices},
          {"mpi_refused_ranks", list(refused_)},
          {"mpi_lost_ranks", list(lost_)},
          {"mpi_sweep_keys", std::to_string(w.keys)},
          {"mpi_sweep_seconds", c_number(w.seconds)},
          {"mpi_retimed_keys", std::to_string(w.retimed)},
          {"mpi_changed_winners", std::to_string(w.changed)}};
}

}  // namespace tunebench
