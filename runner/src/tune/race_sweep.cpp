// RaceSweep and FinalRound: configs clearly slower than the best are dropped after a few runs;
// the finalists get full repetitions, interleaved.

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "tune/sweep_strategy.hpp"
#include "tunebench/cuda.hpp"

namespace tunebench {

using cache::Measurement;
using cache::Status;

namespace {

// Interleaved rounds are batched up to this much estimated kernel time per batch.
constexpr std::int64_t kBatchNs = 50'000'000;

// One config's state in a race.
struct Entry {
  Config config;
  Measurement m;
  std::vector<std::int64_t> samples;  // timed runs (not warmups) of the current round(s)
  std::int64_t screen_ns = 0;         // fastest run of the screen, warmups included
  bool alive = false;                 // still racing
  bool timed = false;                 // it ran (or failed) at least once
  bool ok() const { return m.status == Status::kOk; }
  std::int64_t estimate() const { return m.p50_ns ? *m.p50_ns : std::max<std::int64_t>(screen_ns, 1); }
};

// A sticky CUDA error inside a batch: the batch's configs are recorded, then the sweep stops.
struct Sticky {
  std::string what;
};

std::string flat(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

void mark_failed(Entry& e, const std::exception& x) {
  record_failure(e.m, x);
  e.alive = false;
  e.samples.clear();
}

// Times one batch of runs; on a sticky CudaError every config in it is recorded launch_failed
// and Sticky thrown; another failure is found by timing each config of the batch alone, and
// recorded against those that fail (all of them if none fails alone). Returns false when the
// batch failed (nothing of it counts).
bool interleaved_batch(std::vector<Entry*>& batch_of, const std::vector<Config>& runs, const RunTimer& time_run,
                       SweepStats& stats, std::vector<std::chrono::nanoseconds>& times) {
  try {
    times = run_batch(time_run, runs, &stats);
    return true;
  } catch (const CudaError& x) {
    if (!x.sticky()) throw;
    for (auto* e : batch_of) mark_failed(*e, x);
    throw Sticky{flat(x.what())};
  } catch (const std::exception& x) {
    bool any = false;
    for (auto* e : batch_of) {
      if (!e->alive) continue;
      try {
        run_batch(time_run, {e->config}, &stats);
      } catch (const CudaError& y) {
        mark_failed(*e, y);
        if (y.sticky()) throw Sticky{flat(y.what())};
        any = true;
      } catch (const std::exception& y) {
        mark_failed(*e, y);
        any = true;
      }
    }
    if (!any) {
      for (auto* e : batch_of) mark_failed(*e, x);
    }
    return false;
  }
}

// `runs[i]` timed runs of es[i], round-robin (one run of each per pass), appended to their
// samples; batches of whole passes up to kBatchNs. A config that fails leaves the round.
void interleave(std::vector<Entry*> es, const std::vector<int>& runs, const RunTimer& time_run, SweepStats& stats) {
  const int passes = runs.empty() ? 0 : *std::max_element(runs.begin(), runs.end());
  int pass = 0;
  while (pass < passes) {
    std::vector<Config> batch;
    std::vector<Entry*> owner;
    std::vector<Entry*> members;
    std::int64_t estimated = 0;
    const int first = pass;
    while (pass < passes && (pass == first || estimated < kBatchNs)) {
      for (std::size_t i = 0; i < es.size(); ++i) {
        if (!es[i]->alive || pass >= runs[i]) continue;
        batch.push_back(es[i]->config);
        owner.push_back(es[i]);
        estimated += es[i]->estimate();
        if (std::find(members.begin(), members.end(), es[i]) == members.end()) members.push_back(es[i]);
      }
      ++pass;
    }
    if (batch.empty()) continue;
    std::vector<std::chrono::nanoseconds> times;
    if (!interleaved_batch(members, batch, time_run, stats, times)) {
      pass = first;  // the failing configs have left the round: again without them
      continue;
    }
    for (std::size_t j = 0; j < times.size(); ++j) {
      if (times[j].count() <= 0) {
        mark_failed(*owner[j], std::runtime_error("timer reported a zero time"));
        continue;
      }
      if (owner[j]->alive) owner[j]->samples.push_back(times[j].count());
    }
  }
  for (auto* e : es) {
    if (e->alive && !e->samples.empty()) set_quantiles(e->m, e->samples);
  }
}

// The screen: options.warmup + 1 runs of each config, one config at a time (a config that hangs
// or times out is caught here, where it runs alone).
void screen(std::vector<Entry>& es, const RunTimer& time_run, const TuneOptions& o, SweepStats& stats) {
  using clock = std::chrono::steady_clock;
  for (auto& e : es) {
    if (o.on_progress) o.on_progress(e.m.config, false);
    e.timed = true;
    const auto started = clock::now();
    try {
      const auto t = run_batch(time_run, std::vector<Config>(static_cast<std::size_t>(std::max(0, o.warmup)) + 1, e.config), &stats);
      if (clock::now() - started > o.timeout_per_config) {
        e.m.status = Status::kTimeout;
        e.m.error = "warmup exceeded the per-config timeout";
        continue;
      }
      const auto fastest = std::min_element(t.begin(), t.end())->count();
      if (fastest <= 0) throw std::runtime_error("timer reported a zero time");
      e.screen_ns = fastest;
      e.samples = {t.back().count()};
      e.alive = true;
      set_quantiles(e.m, e.samples);
    } catch (const CudaError& x) {
      mark_failed(e, x);
      if (x.sticky()) throw Sticky{flat(x.what())};
    } catch (const std::exception& x) {
      mark_failed(e, x);
    }
  }
}

std::vector<Entry*> alive_of(std::vector<Entry>& es) {
  std::vector<Entry*> out;
  for (auto& e : es) {
    if (e.alive) out.push_back(&e);
  }
  return out;
}

// Full repetitions for `finals`, interleaved, from fresh samples; `warm` first runs
// options.warmup (at least one) passes, not counted, the last of which sets each config's
// repetitions.
void final_round(std::vector<Entry*> finals, bool warm, const RunTimer& time_run, const TuneOptions& o,
                 SweepStats& stats) {
  if (o.on_progress) o.on_progress("final round of " + std::to_string(finals.size()) + " configs, interleaved", false);
  for (auto* e : finals) e->samples.clear();
  if (warm) {
    // The warmups (at least one: its time sets the repetitions), not counted as samples.
    interleave(finals, std::vector<int>(finals.size(), std::max(1, o.warmup)), time_run, stats);
    for (auto* e : finals) {
      if (!e->alive) continue;
      e->m.p50_ns = e->samples.back();
      e->samples.clear();
    }
  }
  std::vector<int> reps;
  for (auto* e : finals) reps.push_back(full_repetitions(e->estimate(), o));
  interleave(finals, reps, time_run, stats);
}

// The winner among the finals (in order), results for every entry, the stats.
void conclude(std::vector<Entry>& es, const std::vector<Entry*>& finals, const TuneOptions& o, TuneOutcome& out) {
  std::vector<Measurement> final_results;
  for (auto* e : finals) final_results.push_back(e->m);
  if (const auto w = winner_index(final_results, o.tie_tolerance)) {
    out.best = finals[*w]->config;
    out.best_p50_ns = *finals[*w]->m.p50_ns;
  }
  for (auto& e : es) {
    out.results.push_back(e.m);
    const bool final = std::find(finals.begin(), finals.end(), &e) != finals.end();
    if (final && e.ok()) out.stats.finalists.push_back(e.config);
    if (!final && e.ok()) ++out.stats.dropped;
  }
  if (out.stats.finalists.size() < 2) out.stats.finalists.clear();
}

std::vector<Entry> entries_of(const std::vector<Config>& order, const std::string& device_uuid) {
  std::vector<Entry> es;
  for (const auto& c : order) {
    Entry e{c, {}, {}, 0, false, false};
    e.m.config = c.str();
    e.m.device_uuid = device_uuid;
    es.push_back(std::move(e));
  }
  return es;
}

// What was learnt before a sticky error: the failures, and the quantiles of what ran.
void stop_sticky(std::vector<Entry>& es, const Sticky& s, TuneOutcome& out) {
  for (auto& e : es) {
    if (!e.ok()) {
      out.results.push_back(e.m);
    } else if (e.timed && !e.samples.empty()) {
      set_quantiles(e.m, e.samples);
      out.results.push_back(e.m);
    }
  }
  out.fatal_error = s.what;
}

}  // namespace

void RaceSweep::sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& o,
                      const std::string& device_uuid, TuneOutcome& out) const {
  std::vector<Entry> es = entries_of(order, device_uuid);
  try {
    screen(es, time_run, o, out.stats);
    std::int64_t fastest = 0;
    for (auto* e : alive_of(es)) fastest = fastest ? std::min(fastest, e->screen_ns) : e->screen_ns;
    for (auto* e : alive_of(es)) e->alive = static_cast<double>(e->screen_ns) <= o.screen_drop * static_cast<double>(fastest);
    auto racing = alive_of(es);
    if (racing.size() > 1) {
      if (o.on_progress) o.on_progress("race of " + std::to_string(racing.size()) + " configs, interleaved", false);
      interleave(racing, std::vector<int>(racing.size(), o.race_runs), time_run, out.stats);
      racing = alive_of(es);
      const auto best = std::min_element(racing.begin(), racing.end(),
                                         [](auto* a, auto* b) { return *a->m.p50_ns < *b->m.p50_ns; });
      if (best != racing.end()) {
        const double limit = o.race_drop * static_cast<double>(*(*best)->m.p80_ns);
        for (auto* e : racing) e->alive = static_cast<double>(*e->m.p20_ns) <= limit;
      }
    }
    std::vector<Measurement> measured;
    for (const auto& e : es) measured.push_back(e.m);
    std::vector<Entry*> finals;
    for (const auto& c : finalists_of(order, measured, o)) {
      auto it = std::find_if(es.begin(), es.end(), [&](const Entry& e) { return e.config == c; });
      it->alive = true;
      finals.push_back(&*it);
    }
    if (finals.size() > 1) final_round(finals, false, time_run, o, out.stats);
    conclude(es, finals, o, out);
  } catch (const Sticky& s) {
    stop_sticky(es, s, out);
  }
}

void FinalRound::sweep(const std::vector<Config>& order, const RunTimer& time_run, const TuneOptions& o,
                       const std::string& device_uuid, TuneOutcome& out) const {
  std::vector<Entry> es = entries_of(order, device_uuid);
  std::vector<Entry*> finals;
  for (auto& e : es) {
    e.alive = e.timed = true;
    finals.push_back(&e);
  }
  try {
    final_round(finals, true, time_run, o, out.stats);
    for (auto* e : finals) {
      if (e->alive && e->samples.empty()) mark_failed(*e, std::runtime_error("no timed run"));
    }
    conclude(es, finals, o, out);
  } catch (const Sticky& s) {
    stop_sticky(es, s, out);
  }
}

}  // namespace tunebench
