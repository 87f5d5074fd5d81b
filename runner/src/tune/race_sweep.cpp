// RaceSweep and FinalRound: configs clearly slower than the best are dropped after a few runs;
// the finalists get full repetitions, interleaved.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "common/plural.hpp"
#include "tune/sweep_strategy.hpp"
#include "tunebench/cuda.hpp"

namespace tunebench {

using cache::Measurement;
using cache::Status;

namespace {

// One config's state in a race.
struct Entry {
  Config config;
  Measurement m;
  std::vector<std::int64_t> samples;  // timed runs (not warmups) of the current round(s)
  std::int64_t screen_ns = 0;         // fastest run of the screen, warmups included
  std::int64_t screen_total = 0;      // the screen's runs together, for the per-config timeout
  bool alive = false;                 // still racing
  bool timed = false;                 // it ran (or failed) at least once
  bool ok() const { return m.status == Status::kOk; }
  std::int64_t estimate() const { return m.p50_ns ? *m.p50_ns : std::max<std::int64_t>(screen_ns, 1); }
};

// A sticky CUDA error inside a batch: the batch's configs are recorded, then the sweep stops.
struct Sticky {
  std::string what;
};

// A config's warmup run is kept in the screen only while the key's runs are short: a first run
// of a long kernel differs from the next by far less than the screen's bound, and costs as much.
// The same bound says which keys prune: short runs vary by up to 12% and cost little to screen.
constexpr std::int64_t kWarmupNs = 200'000;

// Step 0: the configs options.prune_from ruled out leave the race untimed (status pruned).
// Configs it did not measure, or that failed there (a failure may belong to that shape), run.
void prune(std::vector<Entry>& es, const TuneOptions& o, SweepStats& stats) {
  if (o.prune_factor <= 0 || o.prune_from.empty()) return;
  const std::int64_t best = o.prune_from_best_ns;
  if (best < kWarmupNs) return;
  std::unordered_map<std::string, const Measurement*> there;  // 800 configs a key: no scan per config
  for (const auto& m : o.prune_from) there.emplace(m.config, &m);
  std::vector<std::pair<Entry*, std::string>> out;
  for (auto& e : es) {
    const auto found = there.find(e.m.config);
    if (found == there.end()) continue;
    const Measurement* it = found->second;
    if (it->status == Status::kPruned) {
      out.emplace_back(&e, "not run on " + o.prune_from_label + " either");
    } else if (it->status == Status::kOk && it->p50_ns &&
               static_cast<double>(*it->p50_ns) > o.prune_factor * static_cast<double>(best)) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2fx", static_cast<double>(*it->p50_ns) / static_cast<double>(best));
      out.emplace_back(&e, std::string(ratio) + " the best on " + o.prune_from_label);
    }
  }
  if (out.size() >= es.size()) return;
  for (auto& [e, why] : out) {
    e->m.status = Status::kPruned;
    e->m.error = "pruned: " + why;
    e->timed = true;  // the screen passes it by
  }
  stats.pruned += static_cast<int>(out.size());
}

void mark_failed(Entry& e, std::exception_ptr x, bool* sticky = nullptr) {
  const bool s = record_failure(e.m, x);
  if (sticky) *sticky = s;
  e.alive = false;
  e.samples.clear();
}

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(root_cause(e));
  } catch (const std::exception& x) {
    return one_line_error(x.what());
  } catch (...) {
    return "unknown exception";
  }
}

// Times one batch (`owner[i]` is the entry of run i). A run that fails is recorded against its
// config, which leaves the round; a sticky CUDA error then throws Sticky. A failure no run is
// named for is found by one run of each config alone; a sticky one (found at the collection)
// is recorded against every config of the batch. Returns false when the batch failed (nothing
// of it counts: the caller runs it again without the configs that left).
bool run_chunk(const std::vector<Config>& runs, const std::vector<Entry*>& owner, const RunTimer& time_run,
               SweepStats& stats, std::vector<std::chrono::nanoseconds>& times) {
  std::vector<Entry*> members;
  for (auto* e : owner) {
    if (std::find(members.begin(), members.end(), e) == members.end()) members.push_back(e);
  }
  try {
    times = run_batch(time_run, runs, &stats);
    return true;
  } catch (const BatchRunError& b) {
    bool sticky = false;
    mark_failed(*owner.at(b.run), std::current_exception(), &sticky);
    if (sticky) throw Sticky{what_of(std::current_exception())};
    return false;
  } catch (const CudaError& x) {
    if (x.sticky()) {
      for (auto* e : members) mark_failed(*e, std::current_exception());
      throw Sticky{one_line_error(x.what())};
    }
  } catch (const std::exception&) {
  }
  bool any = false;
  for (auto* e : members) {
    if (!e->alive) continue;
    try {
      run_batch(time_run, {e->config}, &stats);
    } catch (...) {
      bool sticky = false;
      mark_failed(*e, std::current_exception(), &sticky);
      if (sticky) throw Sticky{what_of(std::current_exception())};
      any = true;
    }
  }
  if (!any) {
    for (auto* e : members) mark_failed(*e, std::make_exception_ptr(std::runtime_error("a batch with it failed")));
  }
  return false;
}

// A run that follows another config's kernel starts with its own code out of the SM's
// instruction caches (and out of L2, which the rotated weights flush). On a short kernel that
// costs some configs far more than others (H200, 2026-12-03: a 3.07 us tile config timed back to
// back ran 3.74 us interleaved, a decode config 3.43 against 3.49 us), while Google Benchmark's
// loop and the full sweep time a config's runs back to back. So while a key's runs are short
// (kWarmupNs), each interleaved timed run follows an untimed run of its own config.
bool warm_each_run(const std::vector<Entry*>& es) {
  std::int64_t fastest = 0;
  for (const auto* e : es) {
    if (e->alive) fastest = fastest ? std::min(fastest, e->estimate()) : e->estimate();
  }
  return fastest > 0 && fastest < kWarmupNs;
}

// Untimed runs that make a pass of `n` runs a length with no common factor with `variants`: a
// workload hands its variants out run by run, so with a common factor each config's timed runs
// would see only some of them, in passes of a multiple of them only one (with 8 routings, 4
// configs each timed after a warm run: one routing each for the whole round); without one, any
// `variants` passes give each config every variant once. One run at most for 8 routings.
std::size_t variant_pad(std::size_t n, std::size_t variants) {
  std::size_t pad = 0;
  while (variants > 1 && std::gcd(n + pad, variants) != 1) ++pad;
  return pad;
}

// `runs[i]` timed runs of es[i], round-robin (one run of each per pass), appended to their
// samples; batches of whole passes up to kBatchNs; `warm_each`: each after an untimed run of its
// config; each pass padded with untimed runs of its last config (variant_pad). A config that
// fails leaves the round.
void interleave(std::vector<Entry*> es, const std::vector<int>& runs, const RunTimer& time_run, SweepStats& stats,
                bool warm_each, std::size_t variants) {
  const int passes = runs.empty() ? 0 : *std::max_element(runs.begin(), runs.end());
  int pass = 0;
  while (pass < passes) {
    std::vector<Config> batch;
    std::vector<Entry*> owner;
    std::vector<bool> timed;  // false: the untimed run before a timed one (warm_each)
    std::int64_t estimated = 0;
    const int first = pass;
    while (pass < passes && (pass == first || estimated < kBatchNs)) {
      const std::size_t pass_begin = batch.size();
      for (std::size_t i = 0; i < es.size(); ++i) {
        if (!es[i]->alive || pass >= runs[i]) continue;
        for (int w = warm_each ? 0 : 1; w <= 1; ++w) {
          batch.push_back(es[i]->config);
          owner.push_back(es[i]);
          timed.push_back(w == 1);
          estimated += es[i]->estimate();
        }
      }
      if (batch.size() > pass_begin) {
        Entry* last = owner.back();
        for (std::size_t p = variant_pad(batch.size() - pass_begin, variants); p > 0; --p) {
          batch.push_back(last->config);
          owner.push_back(last);
          timed.push_back(false);
          estimated += last->estimate();
        }
      }
      ++pass;
    }
    if (batch.empty()) continue;
    std::vector<std::chrono::nanoseconds> times;
    if (!run_chunk(batch, owner, time_run, stats, times)) {
      pass = first;  // the failing configs have left the round: again without them
      continue;
    }
    for (std::size_t j = 0; j < times.size(); ++j) {
      if (!timed[j]) continue;
      if (times[j].count() <= 0) {
        mark_failed(*owner[j], std::make_exception_ptr(std::runtime_error("timer reported a zero time")));
        continue;
      }
      if (owner[j]->alive) owner[j]->samples.push_back(times[j].count());
    }
  }
  for (auto* e : es) {
    if (e->alive && !e->samples.empty()) set_quantiles(e->m, e->samples);
  }
}

// The screen: options.warmup + 1 runs of each config (the warmup left out once the key's runs
// are long, kWarmupNs), configs one after the other, in batches of several configs up to
// kBatchNs; a config whose runs exceed the per-config timeout is recorded timeout.
void screen(std::vector<Entry>& es, const RunTimer& time_run, const TuneOptions& o, SweepStats& stats) {
  std::int64_t fastest = 0;
  std::size_t next = 0;
  while (next < es.size()) {
    std::vector<Config> batch;
    std::vector<Entry*> owner;
    std::int64_t estimated = 0;
    const std::size_t begin = next;
    // The first config of a key alone: its time sizes the batches after it.
    while (next < es.size() && (next == begin || (fastest > 0 && estimated < kBatchNs))) {
      Entry& e = es[next++];
      if (!e.ok() && e.timed) continue;
      e.timed = true;
      const int warm = fastest > 0 && fastest >= kWarmupNs ? 0 : std::max(0, o.warmup);
      for (int r = 0; r <= warm; ++r) {
        batch.push_back(e.config);
        owner.push_back(&e);
      }
      estimated += (warm + 1) * std::max<std::int64_t>(fastest, 1);
    }
    if (batch.empty()) continue;
    if (o.on_progress) {
      o.on_progress(owner.front() == owner.back()
                        ? owner.front()->m.config
                        : "screen of " + count_of(static_cast<long long>(next - begin), "config", "configs"),
                    false);
    }
    std::vector<std::chrono::nanoseconds> times;
    if (!run_chunk(batch, owner, time_run, stats, times)) {
      next = begin;  // again, without the config that failed (it is no longer ok)
      continue;
    }
    for (std::size_t j = 0; j < times.size(); ++j) {
      Entry& e = *owner[j];
      const std::int64_t t = times[j].count();
      const bool last = j + 1 == times.size() || owner[j + 1] != &e;
      e.screen_ns = e.screen_ns ? std::min(e.screen_ns, t) : t;
      e.screen_total += t;
      if (!last) continue;
      if (e.screen_ns <= 0) {
        mark_failed(e, std::make_exception_ptr(std::runtime_error("timer reported a zero time")));
      } else if (std::chrono::nanoseconds(e.screen_total) > o.timeout_per_config) {
        e.m.status = Status::kTimeout;
        e.m.error = "warmup exceeded the per-config timeout";
      } else {
        e.samples = {t};
        e.alive = true;
        set_quantiles(e.m, e.samples);
        fastest = fastest ? std::min(fastest, e.screen_ns) : e.screen_ns;
      }
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
  if (o.on_progress)
    o.on_progress(
        "final round of " + count_of(static_cast<long long>(finals.size()), "config", "configs") + ", interleaved",
        false);
  for (auto* e : finals) e->samples.clear();
  if (warm) {
    // The warmups (at least one: its time sets the repetitions), not counted as samples.
    interleave(finals, std::vector<int>(finals.size(), std::max(1, o.warmup)), time_run, stats, false, o.run_variants);
    for (auto* e : finals) {
      if (!e->alive) continue;
      e->m.p50_ns = e->samples.back();
      e->samples.clear();
    }
  }
  // Whole cycles of the workload's variants where that adds at most a third to a config's runs
  // (15 -> 16 for 8 routings); a few long runs, or dozens of weight copies, stay as they are.
  std::vector<int> reps;
  const auto v = static_cast<int>(std::max<std::size_t>(1, o.run_variants));
  for (auto* e : finals) {
    const int r = full_repetitions(e->estimate(), o);
    const int whole = (r + v - 1) / v * v;
    reps.push_back(r >= v && 3 * whole <= 4 * r ? whole : r);
  }
  interleave(finals, reps, time_run, stats, warm_each_run(finals), o.run_variants);
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
    Entry e{c, {}, {}, 0, 0, false, false};
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
  prune(es, o, out.stats);
  try {
    screen(es, time_run, o, out.stats);
    std::int64_t fastest = 0;
    for (auto* e : alive_of(es)) fastest = fastest ? std::min(fastest, e->screen_ns) : e->screen_ns;
    for (auto* e : alive_of(es))
      e->alive = static_cast<double>(e->screen_ns) <= o.screen_drop * static_cast<double>(fastest);
    auto racing = alive_of(es);
    if (racing.size() > 1) {
      if (o.on_progress)
        o.on_progress(
            "race of " + count_of(static_cast<long long>(racing.size()), "config", "configs") + ", interleaved", false);
      interleave(racing, std::vector<int>(racing.size(), o.race_runs), time_run, out.stats, warm_each_run(racing),
                 o.run_variants);
      racing = alive_of(es);
      const auto best =
          std::min_element(racing.begin(), racing.end(), [](auto* a, auto* b) { return *a->m.p50_ns < *b->m.p50_ns; });
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

std::shared_ptr<const SweepStrategy> make_race_sweep() { return std::make_shared<RaceSweep>(); }

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
      if (e->alive && e->samples.empty()) mark_failed(*e, std::make_exception_ptr(std::runtime_error("no timed run")));
    }
    conclude(es, finals, o, out);
  } catch (const Sticky& s) {
    stop_sticky(es, s, out);
  }
}

}  // namespace tunebench
