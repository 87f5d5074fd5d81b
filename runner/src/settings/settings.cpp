#include "settings/settings.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>

#include "common/one_line.hpp"
#include "cuda/kernel_cache_dir.hpp"
#include "tunebench/nvrtc.hpp"
#include "tunebench/op_switch.hpp"

namespace tunebench {
namespace {

using std::invalid_argument;
using std::string;

std::vector<const OpSwitch*>& op_switches() {
  static std::vector<const OpSwitch*> switches;
  return switches;
}

bool is_flag(const string& source) { return source.rfind("--", 0) == 0; }

std::uint64_t parse_u64(const string& text, const string& what) {
  std::uint64_t v = 0;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), last, v);
  if (text.empty() || ptr != last || ec != std::errc()) {
    throw invalid_argument(what + "='" + text + "': expected a non-negative integer below 2^64");
  }
  return v;
}

bool parse_bool(const string& v, const string& what) {
  if (v != "0" && v != "1") throw invalid_argument(what + "='" + v + "': expected 0 or 1");
  return v == "1";
}

// A path that may not be empty. Only a flag can give "": an empty variable is unset (EmptyValue).
string non_empty(const string& v, const string& what, const string& expected) {
  if (v.empty()) throw invalid_argument(what + "='': expected " + expected);
  return v;
}

bool all_of_chars(const string& s, const char* chars) { return s.find_first_not_of(chars) == string::npos; }

// CUDA_VISIBLE_DEVICES as the CUDA runtime reads it: comma-separated entries, each a device index
// (a negative one ends the list: CUDA enumerates nothing from it on, "-1" being the usual "no
// GPU"), a GPU UUID or a prefix of one ("GPU-8932f937-..."), or a MIG instance ("MIG-<uuid>", or
// "MIG-GPU-<uuid>/<GI>/<CI>" of drivers before R470). CUDA itself stops at the first entry it
// cannot read and runs on the devices before it (none for "abc"), so a typo would silently change
// the devices a run uses: refused. "" hides every GPU.
void check_visible_devices(const string& v, const string& what) {
  const char* hex = "0123456789abcdefABCDEF-";
  std::size_t pos = 0;
  while (!v.empty() && pos <= v.size()) {
    const auto comma = std::min(v.find(',', pos), v.size());
    string entry = v.substr(pos, comma - pos);
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    const auto after = [&](const string& prefix) { return entry.substr(prefix.size()); };
    const bool index =
        !entry.empty() && all_of_chars(entry[0] == '-' ? after("-") : entry, "0123456789") && entry != "-";
    const auto uuid = [&](const string& prefix) {
      return entry.rfind(prefix, 0) == 0 && entry.size() > prefix.size() && all_of_chars(after(prefix), hex);
    };
    bool mig_gpu = false;
    if (entry.rfind("MIG-GPU-", 0) == 0) {
      const string rest = after("MIG-GPU-");
      const auto slash = rest.find('/');
      const auto slash2 = slash == string::npos ? string::npos : rest.find('/', slash + 1);
      mig_gpu = slash2 != string::npos && slash > 0 && all_of_chars(rest.substr(0, slash), hex) && slash2 > slash + 1 &&
                all_of_chars(rest.substr(slash + 1, slash2 - slash - 1), "0123456789") && slash2 + 1 < rest.size() &&
                all_of_chars(rest.substr(slash2 + 1), "0123456789");
    }
    if (!index && !uuid("GPU-") && !uuid("MIG-") && !mig_gpu) {
      throw invalid_argument(what + "='" + v + "': " + (entry.empty() ? "an empty entry" : "entry '" + entry + "'") +
                             " is not a device: expected comma-separated device indices (0,1), GPU UUIDs "
                             "(GPU-8932f937-...) or MIG UUIDs (MIG-...), as CUDA reads them; empty or -1 for no GPU");
    }
    pos = comma + 1;
  }
}

// OMP_NUM_THREADS as OpenMP defines it: a positive integer, or a comma-separated list of them
// (threads per nesting level). libgomp warns of anything else when it loads and uses every core.
void check_omp_threads(const string& v, const string& what) {
  std::size_t pos = 0;
  bool ok = !v.empty();
  while (ok && pos <= v.size()) {
    const auto comma = std::min(v.find(',', pos), v.size());
    string n = v.substr(pos, comma - pos);
    n.erase(0, n.find_first_not_of(" \t"));  // libgomp skips blanks around each number
    n.erase(n.find_last_not_of(" \t") + 1);
    std::uint64_t x = 0;
    const auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), x);
    ok = !n.empty() && ptr == n.data() + n.size() && ec == std::errc() && x >= 1 && x <= 2147483647;
    pos = comma + 1;
  }
  if (!ok) {
    throw invalid_argument(what + "='" + v +
                           "': expected the host ops' OpenMP threads, a positive integer (or a comma-separated list "
                           "of them, one per nesting level)");
  }
}

int parse_warmup_gpus(const string& s, const string& what) {
  const bool digits = !s.empty() && s.size() <= 4 &&
                      std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch); }) &&
                      !(s.size() > 1 && s[0] == '0');
  const long n = digits ? std::stol(s) : 0;
  if (!digits || n < 1) {
    throw invalid_argument(what + "='" + s +
                           "': expected the number of GPUs to shard the autotune sweep over, 1 to 9999");
  }
  return static_cast<int>(n);
}

// `text` as a plain decimal number (digits with at most one '.', no sign, blanks, hex or
// exponent); nullopt otherwise. from_chars: a '.' point whatever the process's locale (strtod
// follows LC_NUMERIC).
std::optional<double> plain_decimal(const string& text) {
  const bool decimal = !text.empty() && std::isdigit(static_cast<unsigned char>(text.front())) &&
                       std::isdigit(static_cast<unsigned char>(text.back())) &&
                       text.find_first_not_of("0123456789.") == string::npos &&
                       std::count(text.begin(), text.end(), '.') <= 1;
  if (!decimal) return std::nullopt;
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

double parse_hang_timeout(const string& text, const string& what) {
  // Seconds, from 1 s to 1e6 s.
  const auto s = plain_decimal(text);
  if (!s || *s < 1 || *s > 1e6) {
    throw invalid_argument(what + "='" + text + "': expected seconds, a number from 1 to 1000000");
  }
  return *s;
}

double parse_prune_factor(const string& text, const string& what) {
  // 0 (off), or a factor from 1.5 to 1000.
  const auto f = plain_decimal(text);
  if (!f || (*f != 0 && (*f < 1.5 || *f > 1000))) {
    throw invalid_argument(what + "='" + text + "': expected 0 (off) or a factor from 1.5 to 1000, e.g. 4");
  }
  return *f;
}

FaultInjection parse_fault(const string& v, const string& what) {
  FaultInjection f;
  const auto after = [&](const char* prefix) -> std::optional<string> {
    const string p = prefix;
    if (v.rfind(p, 0) == 0) return v.substr(p.size());
    return std::nullopt;
  };
  if (auto i = after("abort-shard=")) {
    f.abort_shard = static_cast<int>(parse_u64(*i, what + " abort-shard"));
  } else if (auto d = after("disagree-shard=")) {
    f.disagree_shard = static_cast<int>(parse_u64(*d, what + " disagree-shard"));
  } else if (auto s = after("sticky-config=")) {
    f.sticky_config = *s;
  } else if (auto h = after("hang-config=")) {
    f.hang_config = *h;
  } else if (auto r = after("kill-rank=")) {
    f.kill_rank = static_cast<int>(parse_u64(*r, what + " kill-rank"));
  } else if (auto c = after("slow-compile=")) {
    f.slow_compile_s = static_cast<int>(std::min<std::uint64_t>(parse_u64(*c, what + " slow-compile"), 3600));
  } else if (v == "evict-fails") {
    f.evict_fails = true;
  } else if (auto w = after("slowdown=")) {
    char* end = nullptr;
    const double x = std::strtod(w->c_str(), &end);
    const bool decimal = w->find_first_not_of("0123456789.eE+-") == string::npos;  // strtod also takes hex, inf
    if (w->empty() || !decimal || *end != '\0' || !(x > 0) || !(x <= 10)) {
      throw invalid_argument(what + "='" + v + "': slowdown expects a fraction F, 0 < F <= 10 (0.01 is 1% slower)");
    }
    f.slowdown = x;
  } else if (!v.empty() && v != "none") {
    throw invalid_argument(
        what + "='" + v +
        "': expected abort-shard=I, disagree-shard=I, sticky-config=C, hang-config=C, kill-rank=R, evict-fails, "
        "slowdown=F, slow-compile=S or none");
  }
  return f;
}

using Parse = std::function<void(Settings&, const string&, const string&)>;

// A row of the table by named fields: row("timing").flag("--tunebench_seed", "N")
// .env("TUNEBENCH_SEED").help(...).default_text("0").parse(...). A row is documented (a line of
// the README's table) unless internal(), and the manifest records its variable unless
// unrecorded().
class Row {
 public:
  explicit Row(string purpose) { spec_.purpose = std::move(purpose); }
  Row& flag(string name, string value) {
    spec_.flag = std::move(name);
    spec_.flag_value = std::move(value);
    return *this;
  }
  Row& env(string name) {
    spec_.env = std::move(name);
    return *this;
  }
  Row& help(string text) {
    spec_.help = std::move(text);
    return *this;
  }
  Row& default_text(string text) {
    spec_.default_text = std::move(text);
    return *this;
  }
  // The variable belongs to another program, which gives "" a meaning of its own: the parser
  // sees it (the default, EmptyValue::kUnset, is tunebench's one rule).
  Row& empty_means_what_its_owner_says() {
    spec_.empty = EmptyValue::kOwners;
    return *this;
  }
  Row& internal() {
    spec_.documented = false;
    return *this;
  }
  Row& unrecorded() {
    unrecorded_ = true;
    return *this;
  }
  Row& parse(Parse p) {
    spec_.parse = std::move(p);
    return *this;
  }
  // Implicit, so that t.push_back(row(...)...) reads as the table it builds.
  operator SettingSpec() const {
    SettingSpec out = spec_;
    out.manifest = !unrecorded_ && (spec_.documented || !spec_.env.empty());
    return out;
  }

 private:
  SettingSpec spec_;
  bool unrecorded_ = false;
};

Row row(string purpose) { return Row(std::move(purpose)); }

// The MPI launchers' variables: they say whether bench runs as one rank of several, and which
// GPU of its host a rank takes (docs/multi-node.md). Set by the launcher, not by users.
void add_launcher_rows(std::vector<SettingSpec>& t) {
  const std::pair<const char*, const char*> vars[] = {
      {"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun: ranks in the job; above 1, bench is one rank of an MPI sweep"},
      {"OMPI_COMM_WORLD_RANK", "Open MPI's mpirun: this rank (0 coordinates and measures)"},
      {"OMPI_COMM_WORLD_LOCAL_RANK",
       "Open MPI's mpirun: the rank on its host, which picks that entry of the host's `CUDA_VISIBLE_DEVICES`"},
      {"PMI_SIZE", "MPICH's launcher: ranks in the job"},
      {"PMI_RANK", "MPICH's launcher: this rank"},
      {"MPI_LOCALRANKID", "MPICH's launcher: the rank on its host (its GPU entry)"},
      {"SLURM_STEP_NUM_TASKS", "Slurm's srun: tasks (ranks) in the step"},
      {"SLURM_PROCID", "Slurm's srun: this task's rank"},
      {"SLURM_LOCALID", "Slurm's srun: the task on its node (its GPU entry)"},
      {"PMIX_RANK", "PMIx (srun --mpi=pmix, Open MPI 5): this rank, where no variable above gives the size"},
  };
  for (const auto& [var, help] : vars) {
    t.push_back(row("launch")
                    .env(var)
                    .help(help)
                    .default_text("unset: one process")
                    .parse([](Settings& s, const string& v, const string& what) {
                      if (parse_u64(v, what) > 2147483647)
                        throw invalid_argument(what + "='" + v + "': expected a rank below 2^31");
                      s.launcher[what] = v;
                    }));
  }
}

// "kernel|cudagraph|event", from the timing modes' table.
template <typename Names>
string flag_value(const Names& names) {
  string out;
  for (const auto& m : names) out += (out.empty() ? "" : "|") + string(m.name);
  return out;
}

// TUNEBENCH_SWEEP's help: each strategy of the table, by name.
string sweep_help() {
  string out;
  for (const auto& r : sweep_strategy_table())
    out += (out.empty() ? "" : "; ") + ("`" + string(r.name) + "` " + r.help);
  return "how a key's configs are swept: " + out + " (docs/perf-sweep.md)";
}

std::vector<SettingSpec> own_rows() {
  std::vector<SettingSpec> t;
  t.push_back(row("tuning")
                  .env("USE_FLAGTUNE")
                  .help("`1`: autotune over the expanded config space (exhaustive search) instead of the default one; "
                        "sweeps every key whose expanded space the cache has not yet measured in full (a plain winner "
                        "does not count), and caches the new winners")
                  .default_text("`0`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    if (v != "0" && v != "1") {
                      throw invalid_argument(what + "='" + v + "': expected 0 (plain autotune) or 1 (exhaustive)");
                    }
                    s.space = v == "1" ? SpaceKind::kExpanded : SpaceKind::kDefault;
                  }));
  t.push_back(row("tuning")
                  .flag("--tunebench_cache", "FILE")
                  .env("TUNEBENCH_CACHE")
                  .help("the config cache (SQLite)")
                  .default_text("`$XDG_CACHE_HOME/tunebench/configs.sqlite`, else `~/.cache/tunebench/configs.sqlite`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    s.cache = non_empty(v, what, "a cache file");
                    // Its path is written one a line beside a sweep's scratch (the owner file).
                    if (std::any_of(v.begin(), v.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
                      throw invalid_argument(what + "='" + escape_controls(v) +
                                             "': expected a file path without control characters");
                    }
                  }));
  t.push_back(row("tuning")
                  .env("TUNEBENCH_SWEEP")
                  .help(sweep_help())
                  .default_text("`" + default_sweep_strategy() + "`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    (void)sweep_strategy(v, what);  // the table's names only
                    s.sweep = v;
                  }));
  t.push_back(
      row("tuning")
          .env("TUNEBENCH_PRUNE_FACTOR")
          .help("the race does not run, on a key, the configs that ran more than this factor times the best "
                "on the key with half its M, where that key's best run took 200 us or more (status `pruned` "
                "in the cache); `0`: off, else a factor from 1.5 to 1000 (docs/perf-sweep.md, \"Pruning from the key "
                "with half the M\")")
          .default_text("`4`")
          .parse(
              [](Settings& s, const string& v, const string& what) { s.prune_factor = parse_prune_factor(v, what); }));
  t.push_back(row("tuning")
                  .env("TUNEBENCH_ISOLATE_SWEEP")
                  .help("where a sweep runs without the parallel warmup: `auto` in a child process on the measurement "
                        "GPU when a GPU key needs tuning (a config that leaves a sticky CUDA error then costs the "
                        "child, not the run), in bench itself otherwise; `1` always a child; `0` always in bench")
                  .default_text("`auto`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    if (v != "auto" && v != "0" && v != "1")
                      throw invalid_argument(what + "='" + v + "': expected auto, 0 or 1");
                    s.isolate_sweep = v == "auto" ? IsolateSweep::kAuto
                                      : v == "1"  ? IsolateSweep::kAlways
                                                  : IsolateSweep::kNever;
                  }));
  t.push_back(row("tuning")
                  .env("TUNEBENCH_HANG_TIMEOUT")
                  .help("seconds (1 to 1000000) without progress after which a sweep's child process counts as hung: "
                        "it is killed, and the config it was on recorded as `timeout`")
                  .default_text("`300`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    s.hang_timeout_s = parse_hang_timeout(v, what);
                  }));
  t.push_back(
      row("tuning")
          .env("PARALLEL_WARMUP_GPUS")
          .help("shard the autotune sweep over N GPUs (N from 2 to 9999; child processes) before the serial timing; "
                "unset or 1: off")
          .default_text("off")
          .parse([](Settings& s, const string& v, const string& what) { s.warmup_gpus = parse_warmup_gpus(v, what); }));
  t.push_back(row("replay")
                  .env("REPLAY_FROM")
                  .help("a run directory whose configs to replay exactly (no tuning)")
                  .default_text("record afresh")
                  .parse([](Settings& s, const string& v, const string&) { s.replay_from = v; }));
  t.push_back(row("timing")
                  .flag("--tunebench_timing", flag_value(timing_mode_names()))
                  .env("TUNEBENCH_TIMING")
                  .help("GPU timing: kernel durations by CUPTI of eager launches, of CUDA-graph replays, or CUDA "
                        "events around the launches (also the fallback when CUPTI is taken by another profiler); see "
                        "\"Kernel timing and CUDA graphs\"")
                  .default_text("`kernel`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    const auto mode = parse_timing_mode(v);
                    if (!mode) throw invalid_argument(what + "='" + v + "': expected " + timing_mode_choices());
                    s.timing = *mode;
                  }));
  t.push_back(row("timing")
                  .flag("--tunebench_cold_l2", "0|1")
                  .env("TUNEBENCH_COLD_L2")
                  .help("`1`: overwrite a buffer of 2x the L2 size before every timed run (not counted), so no run "
                        "finds its inputs in L2")
                  .default_text("`0`")
                  .parse([](Settings& s, const string& v, const string& what) { s.cold_l2 = parse_bool(v, what); }));
  t.push_back(row("timing")
                  .flag("--tunebench_timing_loop", flag_value(timing_loop_names()))
                  .env("TUNEBENCH_TIMING_LOOP")
                  .help("how Google Benchmark's loop launches GPU runs (kernel and cudagraph timing): batches of runs "
                        "captured into one CUDA graph, back to back, or one launch per iteration; the same kernels, "
                        "whose times differ by up to a few percent between the two loops (back to back against one "
                        "at a time), so compare runs of one loop (docs/timing.md, \"Graph-batched loop\")")
                  .default_text("`graph`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    const auto loop = parse_timing_loop(v);
                    if (!loop) throw invalid_argument(what + "='" + v + "': expected " + timing_loop_choices());
                    s.timing_loop = *loop;
                  }));
  t.push_back(row("timing")
                  .flag("--tunebench_iterations", flag_value(iteration_sizing_names()))
                  .env("TUNEBENCH_ITERATIONS")
                  .help("Google Benchmark's iteration count: given up front from the config's stored time (the "
                        "count its probe rounds would reach, 1.4 x min_time of runs, without the rounds), or probed "
                        "by Google Benchmark (1, 10, 100, ... iterations); benchmarks with no stored time are "
                        "probed either way (docs/timing.md, \"Iteration counts\")")
                  .default_text("`sized`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    const auto sizing = parse_iteration_sizing(v);
                    if (!sizing) throw invalid_argument(what + "='" + v + "': expected " + iteration_sizing_choices());
                    s.iterations = *sizing;
                  }));
  t.push_back(row("timing")
                  .flag("--tunebench_seed", "N")
                  .env("TUNEBENCH_SEED")
                  .help("seed of the random inputs")
                  .default_text("0")
                  .parse([](Settings& s, const string& v, const string& what) { s.seed = parse_u64(v, what); }));
  t.push_back(row("devices")
                  .env("CUDA_VISIBLE_DEVICES")
                  .help("the GPUs bench may use, as CUDA reads it (comma-separated indices, `GPU-` or `MIG-` UUIDs; "
                        "empty or `-1`: none); shard i of the warmup gets the i-th entry, the measurement runs on "
                        "the first")
                  .default_text("all")
                  .empty_means_what_its_owner_says()
                  .parse([](Settings& s, const string& v, const string& what) {
                    check_visible_devices(v, what);
                    s.visible_devices = v;
                  }));
  t.push_back(row("devices")
                  .env("OMP_NUM_THREADS")
                  .help("OpenMP threads of the host ops (the CPU reference), read by libgomp: a positive integer, "
                        "or a comma-separated list of them (one per nesting level)")
                  .default_text("every core")
                  .empty_means_what_its_owner_says()
                  .parse([](Settings&, const string& v, const string& what) { check_omp_threads(v, what); }));
  t.push_back(row("paths")
                  .flag("--tunebench_shapes", "PATH")
                  .env("TUNEBENCH_SHAPES")
                  .help("shape file, or folder of `*.yaml` / `*.yml`")
                  .default_text("`runs/shape/` of the source tree (installed: `share/tunebench/shape`)")
                  .parse([](Settings& s, const string& v, const string& what) {
                    s.shapes = non_empty(v, what, "a shape file or folder");
                    s.shapes_from_env = !is_flag(what);
                    s.shapes_from_flag = is_flag(what);
                  }));
  t.push_back(row("paths")
                  .flag("--tunebench_runs", "DIR")
                  .env("TUNEBENCH_RUNS")
                  .help("where run directories are made")
                  .default_text("`runs`")
                  .parse([](Settings& s, const string& v, const string& what) {
                    s.runs = non_empty(v, what, "a folder");
                    s.runs_from = what;
                  }));
  t.push_back(row("paths")
                  .env("TUNEBENCH_KERNEL_CACHE")
                  .help("folder of NVRTC-compiled kernels (one cubin per source, config, options, architecture and "
                        "NVRTC version; shared safely by several processes)")
                  .default_text("`$XDG_CACHE_HOME/tunebench/kernels`, else `~/.cache/tunebench/kernels`")
                  .parse([](Settings& s, const string& v, const string&) { s.kernel_cache = v; }));
  add_launcher_rows(t);
  t.push_back(row("tests")
                  .env("TUNEBENCH_FAULT_INJECT")
                  .help("a fault for tunebench's own tests")
                  .default_text("none")
                  .internal()
                  .parse([](Settings& s, const string& v, const string& what) { s.fault = parse_fault(v, what); }));
  // Where the sweep's scratch folder goes: the first of these that is set wins.
  for (const char* var : {"TMPDIR", "TMP", "TEMP", "TEMPDIR"}) {
    t.push_back(row("system")
                    .env(var)
                    .help("scratch folder of the sweep")
                    .default_text("/tmp")
                    .internal()
                    .unrecorded()
                    .parse([var](Settings& s, const string& v, const string&) {
                      if (s.tmp_var.empty()) {
                        s.tmp_var = var;
                        s.tmp_dir = v;
                      }
                    }));
  }
  // Where the default config and kernel caches live (XDG Base Directory Specification).
  for (const char* var : {"XDG_CACHE_HOME", "HOME"}) {
    t.push_back(row("system").env(var).help("base of the default cache folders").internal().unrecorded());
  }
  t.push_back(
      row("check")
          .flag("--tunebench_check", "0|1")
          .help("`1`: check what a run checks before it measures (every setting, the shapes, the filter, the "
                "config cache opened read-only, `REPLAY_FROM`, the runs folder, the devices the sweep needs) "
                "and exit without running or tuning anything, making no run directory or cache: 0 when the run would "
                "start, else the run's "
                "one-line error and exit status")
          .default_text("`0`")
          .parse([](Settings& s, const string& v, const string& what) { s.check_only = parse_bool(v, what); }));
  t.push_back(row("internal")
                  .flag("--tunebench_shard", "I:FILE")
                  .help("this process is shard I of a sweep, tuning the keys in FILE")
                  .internal()
                  .parse([](Settings& s, const string& v, const string& what) {
                    const auto colon = v.find(':');
                    if (colon == string::npos) throw invalid_argument(what + ": expected INDEX:FILE");
                    s.shard = static_cast<int>(parse_u64(v.substr(0, colon), what));
                    s.shard_list = v.substr(colon + 1);
                  }));
  return t;
}

const char* raw_env(const char* name) { return std::getenv(name); }

// The one place the empty-value rule is applied: a row's variable as the table reads it.
const char* table_env(const string& name, EmptyValue empty) {
  const char* v = raw_env(name.c_str());
  return v && !*v && empty == EmptyValue::kUnset ? nullptr : v;
}

std::string escape_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::vector<SettingSpec> settings_table() {
  auto t = own_rows();
  for (const OpSwitch* sw : op_switches()) {
    // Checked like the others: a bad value stops bench at start.
    t.push_back(row("op")
                    .env(sw->env())
                    .help(sw->help())
                    .default_text(sw->default_value() ? "`1`" : "`0`")
                    .parse([sw](Settings&, const string&, const string&) { (void)sw->value(); }));
  }
  return t;
}

const char* setting_env(const std::string& name) {
  static std::once_flag once;
  static std::map<std::string, EmptyValue> known;
  std::call_once(once, [] {
    for (const auto& r : own_rows()) {
      if (!r.env.empty()) known.emplace(r.env, r.empty);
    }
  });
  if (const auto it = known.find(name); it != known.end()) return table_env(name, it->second);
  const bool op_switch =
      std::any_of(op_switches().begin(), op_switches().end(), [&](const OpSwitch* s) { return s->env() == name; });
  if (!op_switch) throw std::logic_error("environment variable " + name + " is not in tunebench's settings table");
  return table_env(name, EmptyValue::kUnset);  // an op's switch is tunebench's: its rows say so
}

Settings parse_settings(int* argc, char** argv, const std::filesystem::path& default_shapes) {
  Settings out;
  out.shapes = default_shapes;
  const auto table = settings_table();
  std::set<const SettingSpec*> given;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    constexpr std::string_view prefix = "--tunebench_";
    if (arg.substr(0, prefix.size()) != prefix) {
      argv[kept++] = argv[i];
      continue;
    }
    const auto eq = arg.find('=');
    const string name(arg.substr(0, eq));
    if (eq == std::string_view::npos) throw invalid_argument(name + ": expected " + name + "=VALUE");
    const auto spec = std::find_if(table.begin(), table.end(),
                                   [&](const SettingSpec& r) { return !r.flag.empty() && name == r.flag; });
    if (spec == table.end()) {
      string list;
      for (const auto& r : table) {
        if (!r.flag.empty() && r.documented) list += (list.empty() ? "" : ", ") + r.flag;
      }
      throw invalid_argument(name + ": unknown flag (tunebench flags: " + list + ")");
    }
    spec->parse(out, string(arg.substr(eq + 1)), name);
    given.insert(&*spec);
  }
  // The environment fills in what no flag gave (and is only checked then).
  for (const auto& r : table) {
    if (r.env.empty() || given.count(&r)) continue;
    const char* v = table_env(r.env, r.empty);
    if (v && r.parse) r.parse(out, v, r.env);
  }
  *argc = kept;
  argv[kept] = nullptr;
  return out;
}

cache::CacheLocationEnv cache_location_env() {
  return {setting_env("TUNEBENCH_CACHE"), setting_env("XDG_CACHE_HOME"), setting_env("HOME")};
}

std::filesystem::path config_cache_file(const Settings& settings) {
  return settings.cache.empty() ? cache::default_cache_path(cache_location_env()) : settings.cache;
}

std::filesystem::path default_kernel_cache_dir() {
  if (const char* p = setting_env("TUNEBENCH_KERNEL_CACHE"); p && *p) return p;
  return cache::tunebench_cache_home("TUNEBENCH_KERNEL_CACHE", cache_location_env()) / "kernels";
}

std::filesystem::path kernel_cache_dir(const std::filesystem::path& kernel_cache) noexcept {
  if (!kernel_cache.empty()) return kernel_cache;
  try {
    return cache::tunebench_cache_home("TUNEBENCH_KERNEL_CACHE", cache_location_env()) / "kernels";
  } catch (const std::exception&) {
    return {};
  }
}

namespace {

// Until an entry point sets the JIT caches' folder (bench does, in run_benchmarks), they resolve
// it from the environment when they first compile, so a test or tool that sets
// TUNEBENCH_KERNEL_CACHE after making its ops is obeyed. Installed when this file is linked,
// which any binary with an op is (OpSwitch is defined here).
[[maybe_unused]] const bool kernel_cache_resolver_installed =
    (set_kernel_cache_dir_resolver([] { return default_kernel_cache_dir(); }), true);

}  // namespace

std::map<std::string, std::string> manifest_environment() {
  std::map<std::string, std::string> env;
  for (const auto& r : settings_table()) {
    if (!r.manifest || r.env.empty()) continue;
    if (const char* v = table_env(r.env, r.empty)) env[r.env] = v;
  }
  return env;
}

std::vector<std::string> settings_markdown_rows() {
  std::vector<std::string> rows;
  for (const auto& r : settings_table()) {
    if (!r.documented) continue;
    const string flag =
        r.flag.empty() ? "" : "`" + escape_cell(r.flag + (r.flag_value.empty() ? "" : "=" + r.flag_value)) + "`";
    const string env = r.env.empty() ? "" : "`" + r.env + "`";
    string line = "|";
    for (const string& cell : {r.purpose, flag, env, r.help, r.default_text}) {
      line += cell.empty() ? " |" : " " + cell + " |";
    }
    rows.push_back(line);
  }
  return rows;
}

OpSwitch::OpSwitch(std::string env, std::string help, bool default_value)
    : env_(std::move(env)), help_(std::move(help)), default_(default_value) {
  const bool name_ok = !env_.empty() && std::isupper(static_cast<unsigned char>(env_[0])) &&
                       std::all_of(env_.begin(), env_.end(),
                                   [](unsigned char c) { return std::isupper(c) || std::isdigit(c) || c == '_'; });
  if (!name_ok) throw invalid_argument("op switch '" + env_ + "': expected a variable name [A-Z][A-Z0-9_]*");
  for (const OpSwitch* s : op_switches()) {
    if (s->env() == env_) throw invalid_argument("op switch " + env_ + " is declared twice");
  }
  op_switches().push_back(this);
}

bool OpSwitch::value() const {
  const char* v = table_env(env_, EmptyValue::kUnset);  // as its row in settings_table() reads it
  if (!v) return default_;
  return parse_bool(v, env_);
}

}  // namespace tunebench
