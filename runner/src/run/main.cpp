#include "tunebench/main.hpp"
#include "settings/options.hpp"

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <ctime>
#include <unistd.h>
#include <thread>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>

#include "tunebench/cuda.hpp"
#include "timing/cupti_timer.hpp"
#include "cuda/gpu_clock.hpp"
#include "timing/op_timing.hpp"
#include "tunebench/device.hpp"
#include "plan/family.hpp"
#include "plan/filter.hpp"
#include "report/latency_table.hpp"
#include "sweep/parallel_warmup.hpp"
#include "report/run_record.hpp"
#include "tunebench/shape.hpp"
#include "tunebench/version.hpp"

namespace tunebench {
namespace {

// `p` as an absolute path ("" stays ""): a run folder says where things were, whatever folder
// bench was started in.
std::string absolute_text(const std::filesystem::path& p) {
  if (p.empty()) return "";
  std::error_code ec;
  const auto abs = std::filesystem::absolute(p, ec);
  return ec ? p.string() : abs.lexically_normal().string();
}

// The CPU model, the "device" of host ops' cache keys (a tuned CPU tile fits one CPU).
std::string host_cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      std::string name = line.substr(colon + 1);
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t") + 1);
      if (!name.empty()) return name;
    }
  }
  return "unknown CPU";
}

bool has_flag(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == flag || (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag &&
                        arg[flag.size()] == '=')) {
      return true;
    }
  }
  return false;
}

// Points --benchmark_out at "<file>.incomplete" and returns the final path (empty if absent),
// so an interrupted run leaves the previous output intact and never a truncated JSON file.
std::string redirect_output(int argc, char** argv, std::string& storage) {
  constexpr std::string_view flag = "--benchmark_out=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, flag.size()) == flag && arg.size() > flag.size()) {
      const std::string target(arg.substr(flag.size()));
      storage = std::string(flag) + target + ".incomplete";
      argv[i] = storage.data();
      return target;
    }
  }
  return {};
}

// REPLAY_FROM: the recorded configs, refused when recorded on another device or kernel.
void load_replay(const std::filesystem::path& dir, const OpList& ops, RunContext& context) {
  context.replay_source = (dir / "configs.json").string();
  for (auto& e : RunRecord::read(dir)) {
    const auto op = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o->name() == e.op; });
    if (op == ops.end()) continue;  // an op this binary does not have: its families do not exist
    const std::string device = (*op)->needs_gpu() ? context.device.name : context.host_name;
    if (e.kernel_version != (*op)->kernel_version() || e.device != device) {
      throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + e.benchmark + " was recorded with " +
                        e.kernel_version + " on " + e.device + ", this run has " + (*op)->kernel_version() +
                        " on " + device + ": a replay must run the same kernels on the same device");
    }
    context.replay.emplace(e.benchmark, std::move(e));
  }
}

void add_markers(const std::filesystem::path& json_file, const RunContext& context) {
  std::ifstream in(json_file);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return;  // not a JSON output (csv): the markers are in the log and the manifest
  }
  for (const auto& [marker, families] : context.fallbacks->markers) {
    std::string list;
    for (const auto& f : families) list += (list.empty() ? "" : " ") + f;
    doc["context"][marker] = list;
  }
  const auto tmp = json_file.string() + ".tmp";
  std::ofstream(tmp) << doc.dump(2) << "\n";
  std::filesystem::rename(tmp, json_file);
}

// The measurement GPU's SM clock now, for the manifest.
std::string sm_clock_text(const RunContext& context) {
  if (!context.gpu_available) return "";
  const SmClock clock = read_sm_clock(context.device.ordinal);
  return clock.mhz ? std::to_string(*clock.mhz) : "unknown (" + clock.error + ")";
}

// The run directory's configs.json and manifest.json, and what the user should know.
// manifest.json: written with status "running" before the benchmarks start, so a run
// interrupted by Ctrl-C leaves a directory that says so, and again with "complete" at the end.
void write_manifest(const std::filesystem::path& dir, const RunContext& context, const std::vector<std::string>& command,
                    const Options& opt, const std::string& results, bool complete) {
  std::vector<std::string> live;
  if (!context.replay.empty()) {
    for (const auto& e : context.record->entries()) {
      if (e.source != "replayed") live.push_back(e.benchmark);
    }
  }
  std::error_code ec;
  nlohmann::json env = nlohmann::json::object();
  for (const char* name : {"PARALLEL_WARMUP_GPUS", "CUDA_VISIBLE_DEVICES", "USE_FLAGTUNE", "FLAGGEMS_MXFP4_FOLDSCALE",
                           "TUNEBENCH_TIMING", "TUNEBENCH_COLD_L2", "TUNEBENCH_ISOLATE_SWEEP", "TUNEBENCH_HANG_TIMEOUT", "TUNEBENCH_CACHE", "TUNEBENCH_SHAPES", "TUNEBENCH_SEED", "REPLAY_FROM"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  const nlohmann::json manifest = {
      {"status", complete ? "complete" : "running"},
      {"status_note", complete ? "" : "if no bench is running any more, this run was interrupted"},
      {"results", complete ? results : results + ".incomplete"},
      {"command", command},
      {"cwd", std::filesystem::current_path(ec).string()},
      {"env", env},
      {"device", context.gpu_available ? context.device.name : "none (" + context.gpu_reason + ")"},
      {"device_uuid", context.gpu_available ? context.device.uuid : ""},
      {"host", context.host_name},
      {"timing_mode", timing_name({context.timing_mode, context.cold_l2})},
      {"gpu_sm_clock_mhz_end", sm_clock_text(context)},
      {"cuda_toolkit", context.cuda_toolkit},
      {"tunebench_version", kVersion},
      {"tunebench_git_revision", kGitRevision},
      {"shapes", absolute_text(opt.shapes)},
      {"cache", context.cache ? absolute_text(context.cache->path()) : ""},
      {"replay_from", absolute_text(opt.replay_from)},
      {"replay_tuned_live", live},
      {"replay_markers", context.fallbacks->markers}};
  const auto tmp = dir / "manifest.json.tmp";
  std::ofstream(tmp) << manifest.dump(2) << "\n";
  std::filesystem::rename(tmp, dir / "manifest.json");
  if (!complete) return;
  if (!live.empty()) {
    std::cerr << "bench: WARNING: " << live.size() << " benchmarks were not in " << opt.replay_from.string()
              << " or failed there, and got their configs as in a normal run: from the cache or tuned now"
              << " (configs.json says which; manifest.json lists them)\n";
  }
  std::cerr << "bench: run directory " << dir.string() << "\n";
}

// The run directory's configs.json and final manifest.json, and what the user should know.
void finish_run_dir(const std::filesystem::path& dir, const RunContext& context,
                    const std::vector<std::string>& command, const Options& opt, const std::string& results) {
  context.record->write(dir);
  write_manifest(dir, context, command, opt, results, true);
}

// Paths that would only fail after the whole run, checked before it starts.
void check_paths(const std::string& out_file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!out_file.empty()) {
    const fs::path out(out_file);
    if (fs::is_directory(out, ec)) {
      throw std::invalid_argument("--benchmark_out=" + out_file + ": is a folder, expected a file name");
    }
    const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec)) {
      throw std::invalid_argument("--benchmark_out=" + out_file + ": folder " + parent.string() + " does not exist");
    }
  }
  if (const char* dir = std::getenv("TUNEBENCH_KERNEL_CACHE"); dir && *dir && fs::exists(dir, ec) &&
      !fs::is_directory(dir, ec)) {
    throw std::invalid_argument(std::string("TUNEBENCH_KERNEL_CACHE='") + dir + "': is not a folder");
  }
}

int run(int argc, char** argv, const OpList& ops, const std::filesystem::path& default_shapes,
        const std::string& default_filter_gpu, const std::string& default_filter_cpu) {
  const std::vector<std::string> original_args(argv + 1, argv + argc);  // for warmup children
  const std::vector<std::string> command(argv, argv + argc);            // for the manifest
  const Options opt = parse_options(&argc, argv, default_shapes);
  // Google Benchmark answers an unknown format with its usage text and exit status 0.
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    for (const std::string_view flag : {"--benchmark_format=", "--benchmark_out_format="}) {
      if (a.substr(0, flag.size()) != flag) continue;
      const auto v = a.substr(flag.size());
      if (v != "console" && v != "json" && v != "csv") {
        throw std::invalid_argument(std::string(flag.substr(0, flag.size() - 1)) + "='" + std::string(v) +
                                    "': expected console, json or csv");
      }
    }
  }
  const bool filter_given = has_flag(argc, argv, "--benchmark_filter");
  const bool listing = has_flag(argc, argv, "--benchmark_list_tests");
  // The latency table joins the console output; other formats (json, csv) stay Google
  // Benchmark's own. (Read before Initialize, which consumes its flags.)
  const bool console = !has_flag(argc, argv, "--benchmark_format") ||
                       std::any_of(argv, argv + argc, [](const char* a) {
                         return std::string_view(a) == "--benchmark_format=console";
                       });
  const bool tabular = has_flag(argc, argv, "--benchmark_counters_tabular");
  // Every run (not a listing, not a warmup shard) gets its own run directory; the Google
  // Benchmark JSON goes there unless --benchmark_out names another file.
  std::filesystem::path run_dir;
  std::string out_default;
  std::vector<char*> args(argv, argv + argc);
  std::vector<std::filesystem::path> made_roots;  // folders claim_run_dir creates, innermost first
  if (!listing && opt.shard < 0) {
    std::error_code ec;
    for (auto p = std::filesystem::absolute(opt.runs, ec); !ec && !p.empty() && !std::filesystem::exists(p, ec);
         p = p.parent_path()) {
      made_roots.push_back(p);
      if (p == p.parent_path()) break;
    }
    run_dir = claim_run_dir(opt.runs, std::time(nullptr));
    if (!has_flag(argc, argv, "--benchmark_out")) {
      // Named after --benchmark_out_format, so a CSV is never called results.json.
      std::string name = "results.json";
      for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--benchmark_out_format=csv") name = "results.csv";
        if (a == "--benchmark_out_format=console") name = "results.txt";
        if (a == "--benchmark_out_format=json") name = "results.json";
      }
      out_default = "--benchmark_out=" + (run_dir / name).string();
      args.push_back(out_default.data());
    }
  }
  args.push_back(nullptr);
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();
  // A run that stops on bad input leaves no run directory behind: none that is empty, and none
  // that holds only the manifest of a run that an error ended before it measured anything.
  struct RemoveIfEmpty {
    const std::filesystem::path& dir;
    const std::vector<std::filesystem::path>& made_roots;
    ~RemoveIfEmpty() {
      std::error_code ec;
      if (dir.empty()) return;
      if (std::uncaught_exceptions() > 0) {
        std::size_t entries = 0;
        bool manifest_only = true;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
          ++entries;
          manifest_only &= e.path().filename() == "manifest.json";
        }
        if (!ec && entries == 1 && manifest_only) std::filesystem::remove(dir / "manifest.json", ec);
      }
      if (std::filesystem::is_empty(dir, ec)) std::filesystem::remove(dir, ec);
      // Nor the TUNEBENCH_RUNS folder this run made for it.
      for (const auto& p : made_roots) {
        if (!std::filesystem::is_empty(p, ec) || ec) break;
        std::filesystem::remove(p, ec);
      }
    }
  } remove_if_empty{run_dir, made_roots};
  std::string out_flag;
  const std::string out_file = redirect_output(argc, argv, out_flag);
  check_paths(out_file);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  // Families are made inside the try: an op's shape rules are checked there, and their errors
  // are about the same files.
  std::vector<Family> families_made;
  try {
    families_made = make_families(ops, load_shape_path(opt.shapes));
  } catch (const ShapeError& e) {
    const char* env = std::getenv("TUNEBENCH_SHAPES");
    if (env && opt.shapes == env) throw ShapeError(std::string("TUNEBENCH_SHAPES: ") + e.what());
    throw;
  }
  const auto families = std::move(families_made);
  const GpuProbe gpu = probe_gpus();
  const bool any_gpu_op =
      std::any_of(ops.begin(), ops.end(), [](const auto& op) { return op->needs_gpu(); });

  // A listing shows every family whatever the machine; only a run narrows to the default.
  if (!filter_given && !listing) {
    const bool on_gpu = gpu.available() && any_gpu_op;
    std::string filter = on_gpu ? default_filter_gpu : default_filter_cpu;
    // Other shape sets than the shipped ones may not match the default: run every host op.
    const BenchmarkFilter chosen(filter);
    if (std::none_of(families.begin(), families.end(),
                     [&](const Family& f) { return chosen.selects(reported_name(f)); })) {
      filter = on_gpu ? "." : "^cpu_";
    }
    benchmark::SetBenchmarkFilter(filter);
    if (!gpu.available() && opt.shard < 0) {  // a shard runs the keys it is given: no filter of its own
      std::cerr << "bench: no CUDA device (" << gpu.reason
                << "): GPU families skipped, running --benchmark_filter=" << filter << "\n";
    }
  }
  const BenchmarkFilter filter(benchmark::GetBenchmarkFilter());
  if (std::none_of(families.begin(), families.end(),
                   [&](const Family& f) { return filter.selects(reported_name(f)); })) {
    // Before anything is written: no run directory, no empty output file.
    std::cerr << "bench: --benchmark_filter='" << filter.spec()
              << "' matches no benchmark (bench --benchmark_list_tests lists them)\n";
    return 1;
  }

  auto context = std::make_shared<RunContext>();
  context->gpu_available = gpu.available();
  context->gpu_reason = gpu.reason;
  context->seed = opt.seed;
  context->tune.space = opt.space;
  context->timing_mode = opt.timing;  // what was asked; host ops are host-timed whatever it says
  context->cold_l2 = opt.cold_l2;
  // Under the parallel warmup, the shards (same environment) share the host's cores.
  context->tune.compile_threads =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, opt.warmup_gpus));
  context->host_name = host_cpu_name();
  if (gpu.available()) {
    TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
    context->device = query_device(0);
    int runtime = 0;
    TUNEBENCH_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    context->cuda_toolkit = "cuda " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
    std::tie(context->peak_bytes_per_s, context->peak_flops) = roofline_peaks(context->device.name);
    std::string why;
    if (opt.timing != "event" && any_gpu_op && !listing && !CuptiTimer::available(&why)) {
      std::cerr << "bench: CUPTI cannot be used (" << why << "): timing GPU ops with CUDA events (eager launches), launch overhead included\n";
      context->timing_mode = "event";
    }
  }
  if (!listing) {
    const auto path = opt.cache.empty() ? cache::default_cache_path() : opt.cache;
    context->cache = std::make_shared<cache::ConfigCache>(path);
    benchmark::AddCustomContext("tunebench_cache", absolute_text(path));
  }
  if (opt.shard >= 0) return run_shard(families, *context, opt.shard, opt.shard_list);
  if (!listing) {
    context->record = std::make_shared<RunRecord>();
    if (!opt.replay_from.empty()) load_replay(opt.replay_from, ops, *context);
  }
  benchmark::AddCustomContext("tunebench_autotune_space", opt.space == SpaceKind::kExpanded ? "expanded" : "default");

  std::size_t gpu_selected = 0;
  for (const auto& family : families) {
    register_family(family, context);
    if (family.op->needs_gpu() && filter.selects(reported_name(family))) ++gpu_selected;
  }
  if (gpu_selected > 0 && !gpu.available() && !listing) {
    std::cerr << "bench: no CUDA device (" << gpu.reason << "): " << gpu_selected
              << " selected GPU benchmarks cannot run and will be reported as errors (ERROR OCCURRED: 'no CUDA device: ...')\n";
  }

  benchmark::AddCustomContext("tunebench_version", kVersion);
  benchmark::AddCustomContext("tunebench_git_revision", kGitRevision);
  benchmark::AddCustomContext("tunebench_shapes", absolute_text(opt.shapes));
  benchmark::AddCustomContext("tunebench_seed", std::to_string(opt.seed));
  benchmark::AddCustomContext("cuda_devices", gpu.available() ? std::to_string(gpu.count)
                                                              : "0 (" + gpu.reason + ")");
  if (gpu.available()) {
    benchmark::AddCustomContext("gpu_name", context->device.name);
    benchmark::AddCustomContext("gpu_compute_capability", std::to_string(context->device.cc_major) +
                                                              "." + std::to_string(context->device.cc_minor));
    benchmark::AddCustomContext("gpu_sm_count", std::to_string(context->device.sm_count));
    benchmark::AddCustomContext("timing_mode", timing_name({context->timing_mode, context->cold_l2}));
    const SmClock clock = read_sm_clock(0);
    benchmark::AddCustomContext("gpu_sm_clock_mhz_start", clock.mhz ? std::to_string(*clock.mhz) : "unknown (" + clock.error + ")");
    benchmark::AddCustomContext("gpu_uuid", context->device.uuid);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    benchmark::AddCustomContext("cuda_driver_version", std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10));
    benchmark::AddCustomContext("cuda_runtime_version", std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10));
    benchmark::AddCustomContext("cupti_version", std::to_string(CuptiTimer::version()));
    benchmark::AddCustomContext("roofline_peaks", context->peak_flops > 0
        ? "measured on an H200: 4243 GB/s device-to-device copy, 790 TFLOP/s BF16 GEMM"
        : "unknown for this device: no roofline% counter");
  }

  const std::string results_path = out_file.empty() ? "" : std::filesystem::absolute(out_file).string();
  if (!run_dir.empty()) write_manifest(run_dir, *context, command, opt, results_path, false);
  const auto untuned_now = [&] {
    std::vector<const Family*> untuned;
    for (const auto& f : families) {
      if (!filter.selects(reported_name(f)) || (f.op->needs_gpu() && !gpu.available())) continue;
      // A replayed benchmark runs its recorded config without tuning: sweeping its key would
      // cost the whole sweep for a result nobody reads.
      if (context->replay.count(f.name)) continue;
      if (!cached_config(f, *context)) untuned.push_back(&f);
    }
    return untuned;
  };
  // Without the parallel warmup, a sweep with GPU keys still runs in a child process (one
  // shard on the measurement GPU), so a config that leaves a sticky CUDA error costs a fresh
  // child, not this process's GPU (TUNEBENCH_ISOLATE_SWEEP, see Options).
  bool isolate = false;
  if (opt.warmup_gpus < 2 && !listing && opt.isolate_sweep != 0) {
    for (const Family* f : untuned_now()) isolate |= f->op->needs_gpu() || opt.isolate_sweep == 1;
  }
  if ((opt.warmup_gpus >= 2 || isolate) && !listing) {
    // The sweep of every selected key the cache cannot answer, sharded over GPUs, before the
    // serial measurement on the first one.
    auto tokens = device_tokens(std::getenv("CUDA_VISIBLE_DEVICES"), gpu.count);
    if (isolate && tokens.size() > 1) tokens.resize(1);
    if (isolate && tokens.empty()) tokens.push_back("0");  // no device: host ops only
    const int shards = isolate ? 1 : opt.warmup_gpus;
    const std::string what = isolate ? "isolated sweep" : "parallel warmup";
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string self = ec ? std::string(argv[0]) : exe.string();
    auto untuned = untuned_now();
    if (context->cache && context->cache->read_only() && !untuned.empty()) {
      // The children's results reach the run only through the cache: refuse before any sweep
      // starts rather than lose the sweep at the merge.
      std::set<cache::Key> keys;
      for (const Family* f : untuned) keys.insert(cache_key(*f->op, f->shape, *context));
      throw std::invalid_argument("config cache " + context->cache->path().string() + " is read-only, and " +
                                  std::to_string(keys.size()) + " keys need tuning that the " + what +
                                  " could not store: point TUNEBENCH_CACHE or --tunebench_cache at a writable file");
    }
    const auto to_sweep = untuned;
    WarmupReport w = parallel_warmup(untuned, *context, shards, tokens, self, original_args, isolate ? 0.0 : 0.1);
    // Keys a crashed shard left (a sticky CUDA error ends a shard) get further rounds in fresh
    // processes, as long as each round finishes some.
    bool progress = w.tuned > 0 || w.crashed_shards > 0;  // a crash after a sticky error stored it
    for (int round = 1; round < 8 && progress; ++round) {
      const auto left = untuned_now();
      if (left.empty()) break;
      std::cerr << "bench: " << what << " round " << round + 1 << " for " << left.size() << " keys left\n";
      const WarmupReport more = parallel_warmup(left, *context, shards, tokens, self, original_args, 0.0);
      w.tuned += more.tuned;
      w.crashed_shards += more.crashed_shards;
      w.seconds += more.seconds;
      progress = left.size() > untuned_now().size() || more.crashed_shards > 0;
      untuned = left;
    }
    for (const Family* f : to_sweep) {
      if (cached_config(*f, *context)) context->swept.insert(f->name);
    }
    std::string list;
    for (const auto& name : w.disagreeing) list += (list.empty() ? "" : " ") + name;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", w.seconds);
    if (isolate) {
      std::cerr << "bench: isolated sweep: " << w.keys << " keys in a child process in " << seconds << " s, " << w.tuned << " tuned, " << w.crashed_shards
                << " child processes failed\n";
      benchmark::AddCustomContext("tunebench_isolated_sweep_keys", std::to_string(w.keys));
      benchmark::AddCustomContext("tunebench_isolated_sweep_seconds", std::to_string(w.seconds));
    } else {
      std::cerr << "bench: parallel warmup: " << w.keys << " keys on " << w.shards << " shards in "
                << seconds << " s, " << w.tuned << " tuned, " << w.crashed_shards
                << " shards failed, " << w.disagreeing.size() << " disagreements\n";
      for (std::size_t i = 0; i < w.per_shard.size(); ++i) {
        const auto& sh = w.per_shard[i];
        char line[160];
        std::snprintf(line, sizeof line, "bench: parallel warmup shard %zu: %d keys, %.1f s tuning in %.1f s\n", i,
                      sh.keys, sh.tuning_s, sh.wall_s);
        std::cerr << line;
      }
      if (!w.disagreeing.empty()) {
        std::cerr << "bench: WARNING: " << w.disagreeing.size() << " keys got different winners on two shards "
                  << "(re-timed on the measurement GPU): " << list << "\n";
      }
      benchmark::AddCustomContext("parallel_warmup_gpus", std::to_string(opt.warmup_gpus));
      benchmark::AddCustomContext("parallel_warmup_keys", std::to_string(w.keys));
      benchmark::AddCustomContext("parallel_warmup_seconds", std::to_string(w.seconds));
      benchmark::AddCustomContext("parallel_warmup_disagreements", std::to_string(w.disagreeing.size()));
      benchmark::AddCustomContext("parallel_warmup_disagreeing_keys", list);
    }
  }

  // SQLite opens a read-only file for reading; say so once instead of failing key by key
  // (after the sweep's refusal above, so a refused run prints one line).
  if (!listing && context->cache->read_only()) {
    std::cerr << "bench: config cache " << context->cache->path().string() << " is read-only: keys it does not "
              << "answer cannot be tuned (choose a writable one with --tunebench_cache or TUNEBENCH_CACHE)\n";
  }
  if (!run_dir.empty()) benchmark::AddCustomContext("tunebench_run_dir", absolute_text(run_dir));
  if (!opt.replay_from.empty()) benchmark::AddCustomContext("tunebench_replay_from", absolute_text(opt.replay_from));
  std::size_t matched = 0;
  if (console && !listing) {
    int options = benchmark::ConsoleReporter::OO_None;
    if (isatty(STDOUT_FILENO)) options |= benchmark::ConsoleReporter::OO_Color;
    if (tabular) options |= benchmark::ConsoleReporter::OO_Tabular;
    LatencyTableReporter table(families, run_dir, static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
    matched = benchmark::RunSpecifiedBenchmarks(&table);
  } else {
    matched = benchmark::RunSpecifiedBenchmarks();
  }
  context->last->release();  // the last benchmark's device memory, while CUDA is still up
  benchmark::Shutdown();
  if (!run_dir.empty()) finish_run_dir(run_dir, *context, command, opt, results_path);
  if (!out_file.empty()) {
    std::error_code ec;
    const std::string partial = out_file + ".incomplete";
    if (std::filesystem::exists(partial, ec)) {
      std::filesystem::rename(partial, out_file, ec);
      if (ec) {
        std::cerr << "bench: cannot move " << partial << " to " << out_file << " (" << ec.message()
                  << "): the results are in " << partial << "\n";
        return 1;
      }
    }
  }
  // Replay fallbacks happen during the run, after Google Benchmark wrote the context: their
  // markers are added to the JSON file's context afterwards.
  if (!context->fallbacks->markers.empty() && !out_file.empty()) add_markers(out_file, *context);
  if (matched == 0) {
    std::cerr << "bench: --benchmark_filter='" << filter.spec()
              << "' matches no benchmark (bench --benchmark_list_tests lists them)\n";
    return 1;
  }
  return 0;
}

}  // namespace

int run_benchmarks(int argc, char** argv, const OpList& ops,
                   const std::filesystem::path& default_shapes,
                   const std::string& default_filter_gpu, const std::string& default_filter_cpu) {
  try {
    return run(argc, argv, ops, default_shapes, default_filter_gpu, default_filter_cpu);
  } catch (const std::exception& e) {
    std::cerr << "bench: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace tunebench
