// Which config a benchmark runs: replayed, cached, or tuned now (and stored).

#include "context/config_choice.hpp"

#include "common/one_line.hpp"
#include "common/plural.hpp"
#include "context/key_lease.hpp"
#include "settings/invocation.hpp"

#include <algorithm>
#include <iostream>
#include <set>
#include <stdexcept>

namespace tunebench {

cache::Key cache_key(const Op& op, const Shape& shape, const RunContext& context) {
  if (!op.needs_gpu()) {
    return {op.name(), op.kernel_version(), op.tuning_key(shape), context.host_name, "", "host", "host"};
  }
  return {op.name(),
          op.kernel_version(),
          op.tuning_key(shape),
          context.device.name,
          std::to_string(context.device.cc_major) + "." + std::to_string(context.device.cc_minor),
          context.cuda_toolkit,
          timing_name({context.timing_mode, context.cold_l2})};
}

std::optional<cache::Key> half_m_key(const Op& op, const Shape& shape, const RunContext& context) {
  if (context.tune.prune_factor <= 0 || shape.m < 2 || shape.m % 2 != 0) return std::nullopt;
  Shape half = shape;
  half.m /= 2;
  return cache_key(op, half, context);
}

std::string pruning_group(const Family& family) {
  const std::string key = family.op->tuning_key(family.shape);
  std::string rest;
  for (std::size_t at = 0; at <= key.size();) {
    const std::size_t comma = std::min(key.find(',', at), key.size());
    if (key.compare(at, 2, "M=") != 0) rest += key.substr(at, comma - at) + ",";
    at = comma + 1;
  }
  return family.op->name() + " " + rest;
}

namespace {

// `text` as a config `family` can run: one of its op's default or expanded space that
// can_implement accepts for the shape. Configs from outside this process (an imported or stale
// cache row, an edited configs.json) may be neither, and an op given a config it never offered
// may fail in any way, a crash included, so nothing else is ever run. Otherwise nullopt, and
// *why says what is wrong.
std::optional<Config> runnable_config(const Family& family, const std::string& text, const RunContext& context,
                                      std::string* why) {
  const Op& op = *family.op;
  std::optional<Config> config;
  try {
    config = Config::parse(text);
  } catch (const ConfigError& e) {
    *why = e.what();
    return std::nullopt;
  }
  const auto in_space = [&](SpaceKind kind) {
    const auto space = op.config_space(kind);
    return std::find(space.begin(), space.end(), *config) != space.end();
  };
  if (!in_space(SpaceKind::kDefault) && !in_space(SpaceKind::kExpanded)) {
    *why = "not in " + op.name() + "'s config space";
    return std::nullopt;
  }
  if (!op.can_implement(*config, family.shape, context.device)) {
    *why = op.name() + " cannot run it on this shape";
    return std::nullopt;
  }
  return config;
}

// Stores a sweep's outcome; a cache busy past its retries loses nothing of this run (the caller
// keeps the winner in memory) and says in one line what was not stored. Returns whether it was.
bool store_outcome(const RunContext& context, const cache::Key& key, const std::vector<cache::Measurement>& results,
                   const std::optional<cache::Best>& best) {
  if (!context.cache) return true;
  try {
    context.cache->store(key, results, best);
    return true;
  } catch (const cache::SqliteError& e) {
    if (!cache::is_busy(e.code())) throw;
    std::cerr << "bench: WARNING: " << key.op << " " << key.tuning_key << ": "
              << count_of(static_cast<long long>(results.size()), "measurement", "measurements")
              << (best ? " and the best config '" + best->config + "'" : std::string())
              << " not stored, kept for this run only (" << e.what() << ")\n";
    return false;
  }
}

// `text` as one word of a POSIX shell command: as it is when it holds only characters no shell
// reads specially, else single-quoted.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_+-=,.:/@%") == std::string::npos;
  if (plain) return text;
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Why a key whose every fitting config failed in an earlier run is not tuned, and what to do.
// Failures are kept per key (kernel version, device, toolkit, timing) and never retried, which
// is right for a config that cannot compile or crashes; but a key whose every config failed (a
// toolkit bug, rows imported from elsewhere) stays untunable until its failures are forgotten,
// so the message names the command that forgets them.
std::string earlier_failures_text(const TuneOutcome& outcome, const std::vector<cache::Measurement>& known,
                                  const cache::Key& key, const RunContext& context) {
  std::string text =
      count_of(outcome.reused_failures, "config that fits", "configs that fit") + " failed in an earlier run";
  for (const auto& m : known) {
    if (m.status != cache::Status::kOk && m.status != cache::Status::kPruned) {
      text += " (" + std::string(cache::to_string(m.status)) + " [" + escape_controls(m.config) + "]" +
              (m.error.empty() ? std::string() : ": " + escape_controls(m.error)) +
              (outcome.reused_failures > 1 ? ", ..." : "") + ")";
      break;
    }
  }
  text += " and " + std::string(outcome.reused_failures == 1 ? "is" : "are") +
          " not retried under the same kernel version, device and toolkit";
  if (outcome.rejected > 0) text += "; " + std::to_string(outcome.rejected) + " rejected by can_implement";
  if (context.cache) {
    // Escaped too: a path with a newline would break the one-line message.
    text += "; to forget the failures and tune the key again: tunebench-cache --cache=" +
            escape_controls(shell_word(absolute_text(context.cache->path()))) + " evict " + shell_word(key.op) + " " +
            shell_word(key.tuning_key);
  }
  return text;
}

}  // namespace

std::optional<Config> cached_config(const Family& family, const RunContext& context, std::string* unusable) {
  if (!context.cache) return std::nullopt;
  const Op& op = *family.op;
  const cache::Key key = cache_key(op, family.shape, context);
  const auto best = context.cache->best(key);
  if (!best) return std::nullopt;
  std::string why;
  const std::optional<Config> config = runnable_config(family, best->config, context, &why);
  if (!config) {
    if (unusable)
      *unusable =
          "cached config '" + escape_controls(best->config) + "' of " + family.name + " is not one this op can run";
    return std::nullopt;
  }
  if (context.tune.space == SpaceKind::kExpanded) {
    // An exhaustive search (USE_FLAGTUNE=1) is answered only once every config of the expanded
    // space that fits has a measurement for this key: a best from the default space is not.
    std::set<std::string> measured;
    for (const auto& m : context.cache->measurements(key)) measured.insert(m.config);
    for (const auto& c : op.config_space(SpaceKind::kExpanded)) {
      if (!measured.count(c.str()) && c.str() != best->config && op.can_implement(c, family.shape, context.device)) {
        return std::nullopt;
      }
    }
  }
  return config;
}

std::optional<std::int64_t> stored_run_ns(const Family& family, const RunContext& context, const ChoiceLog& choices) {
  if (!context.cache) return std::nullopt;
  std::optional<Config> config;
  if (!context.replay.empty()) {
    if (choices.fallback_of(family.name)) return std::nullopt;
    const auto it = context.replay.find(family.name);
    if (it != context.replay.end()) {
      std::string why;
      config = runnable_config(family, it->second.config, context, &why);
      if (!config) return std::nullopt;
    }
  }
  const cache::Key key = cache_key(*family.op, family.shape, context);
  if (!config && choices.unstored(key)) return std::nullopt;  // a winner the cache could not take
  if (!config) config = cached_config(family, context);
  if (!config) return std::nullopt;
  const auto m = context.cache->measurement(key, config->str());
  if (!m || m->status != cache::Status::kOk || !m->p50_ns || *m->p50_ns <= 0) return std::nullopt;
  // Only a time taken here sizes a count: an imported row (another card, another host, or made
  // up) may be off by any factor, and a count sized from too short a time runs for ever.
  if (family.op->needs_gpu() ? m->device_uuid != context.device.uuid : m->host != cache::this_host()) {
    return std::nullopt;
  }
  return m->p50_ns;
}

// The replayed config, else the cached best config of the family's key, else the winner of a
// sweep that is stored; and where it came from. Throws UnrunnableReplay for a replayed config
// the op cannot run.
std::pair<Config, ConfigSource> choose_config(const Family& family, const RunContext& context, ChoiceLog& choices,
                                              const RunTimer& time_run, const TuneOptions* options, SweepStats* stats,
                                              std::size_t run_variants) {
  const Op& op = *family.op;
  if (!context.replay.empty() && !options) {
    if (auto fallback = choices.fallback_of(family.name)) return {std::move(*fallback), ConfigSource::kTuned};
    const auto it = context.replay.find(family.name);
    if (it != context.replay.end()) {
      std::string why;
      auto config = runnable_config(family, it->second.config, context, &why);
      if (!config) throw UnrunnableReplay(it->second.config, "is not one this op can run (" + why + ")");
      return {std::move(*config), ConfigSource::kReplayed};
    }
  }
  const cache::Key key = cache_key(op, family.shape, context);
  if (!options) {
    if (auto kept = choices.unstored(key)) return {std::move(*kept), ConfigSource::kTuned};
    std::string unusable;
    if (auto cached = cached_config(family, context, &unusable)) {
      return {std::move(*cached), context.swept.count(family.name) ? ConfigSource::kTuned : ConfigSource::kCache};
    }
    if (!unusable.empty()) {
      std::cerr << "bench: " << unusable << "; tuning again\n";
      // Dropped before the sweep: store() keeps a stored best against a slower newcomer, so a
      // best this op cannot run (an edited or imported row) would otherwise stay, retuned every run.
      if (context.cache && !context.cache->read_only()) {
        try {
          if (const auto bad = context.cache->best(key)) context.cache->erase(key, bad->config);
        } catch (const cache::SqliteError& e) {
          std::cerr << "bench: could not drop it from the cache: " << e.what() << "\n";
        }
      }
    }
  }
  if (context.cache && context.cache->read_only()) {
    // Refused before the sweep: its result could not be stored, so it would be lost at the end.
    throw std::runtime_error("config cache " + context.cache->path().string() + " is read-only: " + op.name() + " " +
                             key.tuning_key + " is not in it and cannot be tuned and stored; point TUNEBENCH_CACHE " +
                             "or --tunebench_cache at a writable file");
  }
  // One process tunes a key at a time: while another process sharing the cache tunes this one,
  // its result is waited for (and the key taken over if that process goes). Given options (a
  // re-timing of finalists, a live tune after a failed replay) neither read nor wait.
  KeyLeases lease(context, "");
  if (context.cache && !options) {
    const auto split = lease.claim({&family});
    if (split.mine.empty()) {
      const auto answered = [&](const Family& f) { return cached_config(f, context).has_value(); };
      if (lease.wait(split.others, answered).empty()) {
        if (auto cached = cached_config(family, context)) return {std::move(*cached), ConfigSource::kCache};
      }
    } else if (auto cached = cached_config(family, context)) {
      return {std::move(*cached), ConfigSource::kCache};  // stored by another process before the claim
    }
  }
  std::vector<cache::Measurement> known;
  if (context.cache && !options) known = context.cache->measurements(key);
  const std::string uuid = op.needs_gpu() ? context.device.uuid : "";
  TuneOptions tune = options ? *options : context.tune;
  tune.run_variants = run_variants;
  const auto half = context.cache && !options ? half_m_key(op, family.shape, context) : std::nullopt;
  if (const auto best = half ? context.cache->best(*half) : std::nullopt; best && best->p50_ns > 0) {
    // The key with half the M, where this cache holds it: what the race prunes by.
    tune.prune_from = context.cache->measurements(*half);
    tune.prune_from_best_ns = best->p50_ns;
    tune.prune_from_label = "M=" + std::to_string(family.shape.m / 2);
  }
  if (context.cache && !context.cache->read_only()) {
    // The lease's heartbeat says whether this process still makes progress on the key.
    tune.on_progress = [cache = context.cache, then = tune.on_progress](const std::string& activity, bool compiling) {
      cache->note_progress(compiling);
      if (then) then(activity, compiling);
    };
  }
  const TuneOutcome outcome = autotune(op, family.shape, context.device, time_run, tune, known, uuid);
  if (stats) *stats = outcome.stats;
  if (!outcome.fatal_error.empty()) {
    // Keep what was learnt, the failing config above all, so no later run tries it again.
    store_outcome(context, key, outcome.results, std::nullopt);
    throw StickyCudaError("sticky CUDA error while tuning, the process cannot continue on this GPU: " +
                          outcome.fatal_error);
  }
  std::optional<cache::Best> best;
  if (outcome.found()) best = cache::Best{outcome.best.str(), outcome.best_p50_ns, 0};
  if (!store_outcome(context, key, outcome.results, best) && outcome.found()) choices.keep_unstored(key, outcome.best);
  if (!outcome.found()) {
    std::string why = "no config ran";
    for (const auto& m : outcome.results) {
      if (m.status != cache::Status::kOk && m.status != cache::Status::kPruned) {
        why += " (" + std::string(cache::to_string(m.status)) + " [" + m.config + "]: " + m.error + ")";
        break;
      }
    }
    if (outcome.results.empty() && outcome.reused_failures == 0) {
      why += " (" + std::to_string(outcome.rejected) + " rejected by can_implement)";
    } else if (outcome.results.empty()) {
      why += ": " + earlier_failures_text(outcome, known, key, context);
    }
    throw std::runtime_error(why);
  }
  return {outcome.best, ConfigSource::kTuned};
}

namespace {

// A config string from a file quoted in a message: cut, since it could be any length.
constexpr std::size_t kShownConfig = 80;
std::string shortened(const std::string& text, std::size_t n) {
  return text.size() > n ? text.substr(0, n) + "..." : text;
}

}  // namespace

// A replayed config that the op cannot run, or that no longer compiles or launches: evict it
// from the cache, then tune the key live without reading the cache, so a failed eviction cannot
// hand the bad config back.
// `what` says what is wrong with it ("failed (...)", say).
Config replay_fallback(const Family& family, const RunContext& context, ChoiceLog& choices, OpTiming& timing,
                       const std::string& bad, const std::string& what, const RunTimer* time_run) {
  const Op& op = *family.op;
  std::string marker = "compile_" + op.name() + "_evicted";
  std::string detail = "evicted from the cache";
  try {
    if (context.fault.evict_fails) {
      throw std::runtime_error("injected eviction failure");
    }
    // An edited configs.json may name a config this cache never held: not called evicted then.
    if (!context.cache) {
      detail = "no cache";
    } else if (context.cache->erase(cache_key(op, family.shape, context), bad) == 0) {
      detail = "not in the cache";
    }
  } catch (const std::exception& e) {
    marker = "compile_" + op.name() + "_no_evict";
    detail = std::string("eviction failed: ") + e.what();
  }
  // A config string from a file (configs.json) may hold anything: escaped, the line stays one.
  std::cerr << "bench: [" << marker << "] replayed config '" << escape_controls(shortened(bad, kShownConfig)) << "' of "
            << family.name << " (from " << escape_controls(context.replay_source) << ") "
            << escape_controls(shortened(what, 2 * kShownConfig)) << "; " << escape_controls(detail)
            << "; tuning the key live\n";
  TuneOptions live = context.tune;  // given options: neither replay nor the cache is read
  const Config config = choose_config(family, context, choices, time_run ? *time_run : timing.run_timer(), &live,
                                      nullptr, timing.variants())
                            .first;
  choices.add_fallback(family.name, marker, config);
  return config;
}

std::vector<UnrunnableReplayEntry> unrunnable_replays(const std::vector<const Family*>& selected,
                                                      const RunContext& context) {
  std::vector<UnrunnableReplayEntry> out;
  for (const Family* f : selected) {
    const auto it = context.replay.find(f->name);
    // A GPU op's benchmarks do not run without a device: nothing of theirs is tuned either.
    if (it == context.replay.end() || (f->op->needs_gpu() && !context.gpu_available)) continue;
    std::string why;
    if (!runnable_config(*f, it->second.config, context, &why)) {
      out.push_back({f, escape_controls(f->name + ": '" + shortened(it->second.config, kShownConfig) + "' " +
                                        shortened(why, 2 * kShownConfig))});
    }
  }
  return out;
}

TimingOptions timing_options(const RunContext& context) {
  return {context.timing_mode, context.cold_l2, context.timing_loop};
}

TimingFaults timing_faults(const RunContext& context) {
  return {context.fault.sticky_config, context.fault.hang_config, context.fault.slowdown};
}

Config ensure_tuned(const Family& family, const RunContext& context, ChoiceLog& choices, const TuneOptions* options,
                    SweepStats* stats) {
  OpTiming timing(*family.op, family.shape, context.seed, timing_options(context), timing_faults(context));
  const TuneOptions& tune = options ? *options : context.tune;
  // The first runs of each config are where one hangs: the watchdog is told which config it is.
  if (tune.on_progress || tune.before_new_config) {
    timing.on_new_config([&tune](const std::string& config) {
      if (tune.before_new_config) tune.before_new_config(config);
      if (tune.on_progress) tune.on_progress(config, false);
    });
  }
  return choose_config(family, context, choices, timing.run_timer(), options, stats, timing.variants()).first;
}

}  // namespace tunebench
