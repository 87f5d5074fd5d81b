// perf_sweep: the winner quality of one sweep against another. For every selected benchmark whose
// key has a best config in both caches, the two winners are re-timed here, in one process, in one
// interleaved final round (FinalRound: a warmup each, then full repetitions round-robin), and the
// ratio of their p50s printed; then the share of keys whose second winner is within 1% and 2% of
// the first's. scripts/perf_sweep.sh uses it to compare TUNEBENCH_SWEEP=race against full.
// Nothing is stored in either cache.
//
// usage: perf_sweep CACHE_A CACHE_B [--tunebench_shapes=PATH] [--benchmark_filter=REGEX]
//   (filter default ^mxfp4_; USE_FLAGTUNE and TUNEBENCH_TIMING as bench reads them, so the keys
//   match bench's). Exit status: 0 compared, 1 no key has a best config in both caches, 2 bad
//   usage or input.

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/one_line.hpp"
#include "context/config_choice.hpp"
#include "context/context_setup.hpp"
#include "ops.hpp"
#include "plan/filter.hpp"
#include "plan/selection.hpp"
#include "tune/sweep_strategy.hpp"

namespace {

using namespace tunebench;

constexpr const char* kUsage =
    "usage: perf_sweep CACHE_A CACHE_B [--tunebench_shapes=PATH] [--benchmark_filter=REGEX (default ^mxfp4_)]";

struct Pair {
  std::string name, a, b;
  double a_ns = 0, b_ns = 0;
  std::string failed;  // what a winner that did not run in the re-timing gave, "A: status: error"
};

// A cache file given to compare: an existing, non-empty regular file (SQLite would make an empty
// or missing one a fresh cache, and this tool stores nothing in the caches it reads).
void check_cache_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw std::invalid_argument(path + ": no such file, expected a config cache");
  if (!std::filesystem::is_regular_file(status))
    throw std::invalid_argument(path + ": not a file, expected a config cache");
  if (std::filesystem::file_size(path, ec) == 0) throw std::invalid_argument(path + ": empty, expected a config cache");
}

// Both winners timed in one interleaved final round; 0 for one that did not run.
Pair retime(const Family& f, const RunContext& context, const std::string& a, const std::string& b) {
  Pair p;
  p.name = f.name;
  p.a = a;
  p.b = b;
  if (a == b) {
    p.a_ns = p.b_ns = 1;
    return p;
  }
  TuneOptions o = context.tune;
  o.only = {Config::parse(a), Config::parse(b)};
  o.strategy = std::make_shared<FinalRound>();
  OpTiming timing(*f.op, f.shape, context.seed, timing_options(context), {});
  const TuneOutcome out = autotune(*f.op, f.shape, context.device, timing.run_timer(), o);
  for (const auto& m : out.results) {
    if (m.status != cache::Status::kOk) {
      p.failed += std::string(p.failed.empty() ? "" : "; ") + (m.config == a ? "A: " : "B: ") +
                  std::string(cache::to_string(m.status)) + ": " + m.error;
      continue;
    }
    (m.config == a ? p.a_ns : p.b_ns) = static_cast<double>(*m.p50_ns);
  }
  if (p.a_ns == 0 && p.b_ns == 0 && p.failed.empty())
    p.failed = "neither ran: " + std::to_string(out.rejected) + " rejected by can_implement";
  return p;
}

int run(int argc, char** argv) {
  std::string filter_text = "^mxfp4_";
  std::vector<char*> rest{argv[0]};
  std::vector<std::string> caches;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::cout << kUsage << "\n";
      return 0;
    } else if (std::strncmp(argv[i], "--benchmark_filter=", 19) == 0) {
      filter_text = argv[i] + 19;
    } else if (std::strncmp(argv[i], "--tunebench_", 12) == 0) {
      rest.push_back(argv[i]);  // parse_settings names an unknown one
    } else if (argv[i][0] == '-') {
      std::cerr << "perf_sweep: unknown flag '" << escape_controls(argv[i]) << "'; " << kUsage << "\n";
      return 2;
    } else {
      caches.push_back(argv[i]);
    }
  }
  if (caches.size() != 2) {
    std::cerr << kUsage << "\n";
    return 2;
  }
  for (const auto& c : caches) check_cache_file(c);
  int n = static_cast<int>(rest.size());
  Settings settings = parse_settings(&n, rest.data(), TUNEBENCH_SOURCE_SHAPES);
  // The re-timing stores nothing in A or B: the context's cache is a scratch file of this process.
  std::string scratch_dir = (std::filesystem::temp_directory_path() / "tunebench-perf-sweep-XXXXXX").string();
  if (!mkdtemp(scratch_dir.data())) throw std::runtime_error("cannot create a scratch folder " + scratch_dir);
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_scratch{scratch_dir};
  settings.cache = std::filesystem::path(scratch_dir) / "scratch.sqlite";
  const OpList ops = bench::builtin_ops();
  const auto families = plan_families(ops, settings);
  const BenchmarkFilter filter(filter_text);
  const auto context = make_context(settings, probe_gpus(), ops, ContextFor::kRun);
  cache::ConfigCache a(caches[0], cache::ConfigCache::OnDamage::kThrow);
  cache::ConfigCache b(caches[1], cache::ConfigCache::OnDamage::kThrow);
  std::vector<Pair> pairs;
  std::printf("%-72s %10s %10s %8s\n", "benchmark (A and B winners re-timed together)", "A p50 ns", "B p50 ns", "B/A");
  for (const auto& f : families) {
    if (!filter.selects(reported_name(f)) || (f.op->needs_gpu() && !context->gpu_available)) continue;
    const auto key = cache_key(*f.op, f.shape, *context);
    const auto best_a = a.best(key), best_b = b.best(key);
    if (!best_a || !best_b) continue;
    if (std::any_of(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.name == f.name; })) continue;
    const Pair p = retime(f, *context, best_a->config, best_b->config);
    pairs.push_back(p);
    if (p.a == p.b) {
      std::printf("%-72s %10s %10s %8s  (same config)\n", f.name.c_str(), "-", "-", "1");
    } else {
      std::printf("%-72s %10.0f %10.0f %8.4f%s\n", f.name.c_str(), p.a_ns, p.b_ns, p.a_ns > 0 ? p.b_ns / p.a_ns : 0.0,
                  p.failed.empty() ? "" : ("  (" + escape_controls(p.failed) + ")").c_str());
    }
  }
  if (pairs.empty()) {
    std::cerr << "perf_sweep: no benchmark that --benchmark_filter='" << escape_controls(filter_text)
              << "' selects has a best config in both caches\n";
    return 1;
  }
  int within1 = 0, within2 = 0, same = 0;
  double worst = 0;
  for (const auto& p : pairs) {
    const double r = p.a_ns > 0 && p.b_ns > 0 ? p.b_ns / p.a_ns : 1e9;
    within1 += r <= 1.01;
    within2 += r <= 1.02;
    same += p.a == p.b;
    worst = std::max(worst, r);
  }
  const double keys = std::max<std::size_t>(1, pairs.size());
  std::printf(
      "winner quality: %zu keys, %d same config, B within 1%% of A on %d (%.1f%%), within 2%% on %d (%.1f%%), "
      "worst B/A %.4f\n",
      pairs.size(), same, within1, 100.0 * within1 / keys, within2, 100.0 * within2 / keys, worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "perf_sweep: " << escape_controls(e.what()) << "\n";
    return 2;
  }
}
