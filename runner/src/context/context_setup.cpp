#include "context/context_setup.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/regular_file.hpp"
#include "timing/cupti_timer.hpp"
#include "timing/op_timing.hpp"
#include "tune/sweep_strategy.hpp"
#include "tune/sweep_strategy_table.hpp"
#include "tunebench/version.hpp"

namespace tunebench {
namespace {

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

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The measurement GPU: device 0 of this process's CUDA_VISIBLE_DEVICES.
void use_gpu(RunContext& c, const OpList& ops, bool listing) {
  TUNEBENCH_CUDA_CHECK(cudaSetDevice(0));
  c.device = query_device(0);
  int runtime = 0;
  TUNEBENCH_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  c.cuda_toolkit = "cuda " + version_text(runtime);
  const bool any_gpu_op = std::any_of(ops.begin(), ops.end(), [](const auto& op) { return op->needs_gpu(); });
  std::string why;
  if (uses_cupti(c.timing_mode) && any_gpu_op && !listing && !CuptiTimer::available(&why)) {
    std::cerr << "bench: CUPTI cannot be used (" << why
              << "): timing GPU ops with CUDA events (eager launches), launch overhead included\n";
    c.timing_mode = TimingMode::kEvent;
  }
}

// The device as manifest.json names it: the GPU's name, or "none (why)" without one.
std::string manifest_device(const RunContext& c) {
  return c.gpu_available ? c.device.name : "none (" + c.gpu_reason + ")";
}

// REPLAY_FROM's manifest.json against this run, as the README says a replay is checked: a run
// that did not complete, another device (a GPU or none, whatever the reason) or another timing
// mode is refused; another tunebench version or git revision is an A/B across builds (replaying
// one build's configs on another is the point), so it only warns; so does a dir without a
// manifest (written by a bench older than manifests).
void check_replay_manifest(const std::filesystem::path& dir, const RunContext& context) {
  const std::filesystem::path file = dir / "manifest.json";
  std::optional<std::string> text;
  try {
    text = read_regular_file(file);
  } catch (const NotRegularFile& e) {
    throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + e.what());
  }
  if (!text) {
    std::cerr
        << "bench: WARNING: REPLAY_FROM=" << dir.string()
        << " has no manifest.json (a run dir of an older bench?): its status, device and timing mode are not checked\n";
    return;
  }
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + file.string() +
                      ": empty (expected the manifest.json bench writes in a run directory)");
  }
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(*text);
    if (!m.is_object()) throw std::runtime_error("not an object");
  } catch (const std::exception&) {
    throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + file.string() +
                      ": not the JSON bench writes as manifest.json");
  }
  const auto field = [&](const char* name) -> std::optional<std::string> {
    const auto it = m.find(name);
    if (it == m.end()) return std::nullopt;
    if (!it->is_string()) {
      throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + file.string() + ": \"" + name + "\": " + it->dump() +
                        ", expected a string");
    }
    return it->get<std::string>();
  };
  const auto refuse = [&](const char* name, const std::string& recorded, const std::string& here, const char* why) {
    throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + file.string() + ": " + name + " '" + recorded +
                      "', this run's is '" + here + "': " + why);
  };
  const auto status = field("status");
  if (!status) {
    throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + file.string() +
                      ": no \"status\" (not the manifest.json bench writes in a run directory)");
  }
  if (*status != "complete") refuse("status", *status, "complete", "only a run that completed can be replayed");
  const std::string device = manifest_device(context);
  if (const auto recorded = field("device")) {
    const bool both_none = recorded->rfind("none (", 0) == 0 && !context.gpu_available;
    if (*recorded != device && !both_none) refuse("device", *recorded, device, "a replay must run on the same device");
  }
  // A run of host ops alone times them on the host, as the recorded run did whatever its GPU
  // timing was (an older bench recorded the GPU setting on such a run): only a run that times
  // GPU ops must match.
  const std::string timing = run_timing_name(context);
  if (const auto recorded = field("timing_mode"); recorded && *recorded != timing && context.times_gpu_ops) {
    refuse("timing_mode", *recorded, timing, "a replay must time as the recorded run did");
  }
  for (const auto& [name, here] : {std::pair<const char*, std::string>{"tunebench_version", kVersion},
                                   std::pair<const char*, std::string>{"tunebench_git_revision", kGitRevision}}) {
    if (const auto recorded = field(name); recorded && *recorded != here) {
      std::cerr << "bench: WARNING: REPLAY_FROM=" << dir.string() << ": " << file.string() << ": " << name << " '"
                << *recorded << "', this build's is '" << here << "': replaying its configs across builds\n";
    }
  }
}

// A cache to be made in a folder of a kernel file system (/proc, /sys): root passes access() there
// and SQLite still cannot create the file. Refused alike by a check and a run.
void refuse_kernel_file_system(const std::filesystem::path& file, const std::filesystem::path& folder) {
  if (const std::string kfs = kernel_file_system(folder); !kfs.empty()) {
    throw std::invalid_argument("config cache " + file.string() + ": cannot create it: the folder " + folder.string() +
                                " is on " + kfs + ", a kernel file system");
  }
}

// --tunebench_check=1's cache (ContextFor::kCheck): what a run would refuse is refused alike, and
// nothing is made or changed.
std::shared_ptr<cache::ConfigCache> open_cache_for_check(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto type = fs::status(file, ec).type();
  // A link to nothing goes to the read-only open below, which refuses it as a run's open does.
  if (type == fs::file_type::not_found && !fs::is_symlink(file, ec)) {
    // A run makes it, and the folders above it: the first folder that exists must take them.
    fs::path folder = fs::absolute(file, ec).parent_path();
    while (!folder.empty() && !fs::exists(folder, ec) && folder != folder.parent_path()) folder = folder.parent_path();
    if (!fs::is_directory(folder, ec)) {
      throw std::invalid_argument("config cache " + file.string() + ": cannot create its folder: " + folder.string() +
                                  " is not a folder");
    }
    if (::access(folder.c_str(), W_OK | X_OK) != 0) {
      throw std::invalid_argument("config cache " + file.string() + ": cannot create it: the folder " +
                                  folder.string() + " is not writable by this user");
    }
    refuse_kernel_file_system(file, folder);
    return nullptr;
  }
  // A run starts a new cache in an empty file.
  if (type == fs::file_type::regular && fs::file_size(file, ec) == 0 && !ec) return nullptr;
  // Not a regular file, no permission, a foreign file, a newer schema: refused by the read-only
  // open as the run's open refuses them.
  try {
    return std::make_shared<cache::ConfigCache>(file, cache::ConfigCache::OnDamage::kThrow, cache::BusyPolicy(),
                                                cache::Access::kRead);
  } catch (const cache::SqliteError& e) {
    if ((e.code() & 0xff) != SQLITE_CORRUPT) throw;
    // Not refused (a run moves it aside and starts afresh), but its results are lost to that run.
    std::cerr << "bench: WARNING: " << e.what() << "\n";
    return nullptr;
  }
}

}  // namespace

bool cache_read_only_for_a_run(const std::filesystem::path& path) {
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  return ::access(path.c_str(), W_OK) != 0 || ::access(folder.c_str(), W_OK) != 0;
}

std::shared_ptr<RunContext> make_context(const Settings& settings, const GpuProbe& gpu, const OpList& ops,
                                         ContextFor for_what) {
  const bool listing = for_what != ContextFor::kRun;
  auto c = std::make_shared<RunContext>();
  c->gpu_available = gpu.available();
  c->gpu_reason = gpu.reason;
  c->seed = settings.seed;
  c->tune.space = settings.space;
  c->tune.strategy = sweep_strategy(settings.sweep, "TUNEBENCH_SWEEP");
  c->tune.prune_factor = settings.prune_factor;
  c->timing_mode = settings.timing;  // what was asked; host ops are host-timed whatever it says
  c->cold_l2 = settings.cold_l2;
  c->timing_loop = settings.timing_loop;
  c->fault = settings.fault;
  // Under the parallel warmup, the shards (same environment) share the host's cores.
  c->tune.compile_threads =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, settings.warmup_gpus));
  c->host_name = host_cpu_name();
  if (gpu.available()) use_gpu(*c, ops, listing);
  if (for_what == ContextFor::kListing) return c;
  const std::filesystem::path cache_file = config_cache_file(settings);
  if (for_what == ContextFor::kRun) {
    std::error_code ec;
    if (!std::filesystem::exists(cache_file, ec)) {
      std::filesystem::path folder = std::filesystem::absolute(cache_file, ec).parent_path();
      while (!folder.empty() && !std::filesystem::exists(folder, ec) && folder != folder.parent_path()) {
        folder = folder.parent_path();
      }
      refuse_kernel_file_system(cache_file, folder);
    }
  }
  c->cache = for_what == ContextFor::kRun ? std::make_shared<cache::ConfigCache>(cache_file)
                                          : open_cache_for_check(cache_file);
  if (c->cache) {
    // A process that tunes a key in itself and makes no progress for as long as the sweep's
    // watchdog allows a child is stuck (a kernel that never returns): others may take its keys.
    cache::LeasePolicy leases;
    leases.stalled_after = std::chrono::milliseconds(static_cast<std::int64_t>(settings.hang_timeout_s * 1000));
    c->cache->set_lease_policy(leases);
  }
  return c;
}

std::string run_timing_name(const RunContext& context) {
  return context.times_gpu_ops ? timing_name({context.timing_mode, context.cold_l2}) : "host";
}

void load_replay(const std::filesystem::path& dir, const OpList& ops, RunContext& context) {
  context.replay_source = (dir / "configs.json").string();
  // The folder first, so a mistyped REPLAY_FROM is named, not a configs.json inside it.
  std::error_code ec;
  const auto type = std::filesystem::status(dir, ec).type();
  if (type == std::filesystem::file_type::not_found) {
    throw ReplayError("REPLAY_FROM=" + dir.string() +
                      ": no such folder (expected the run directory of an earlier bench run)");
  }
  if (ec) throw ReplayError("REPLAY_FROM=" + dir.string() + ": cannot read (" + ec.message() + ")");
  if (type != std::filesystem::file_type::directory) {
    throw ReplayError("REPLAY_FROM=" + dir.string() +
                      ": not a folder (expected the run directory of an earlier bench run)");
  }
  auto recorded = RunRecord::read(dir);
  check_replay_manifest(dir, context);
  for (auto& e : recorded) {
    // A benchmark's name starts with its op's: an entry that says otherwise was edited.
    if (e.benchmark.compare(0, e.op.size() + 1, e.op + "/") != 0) {
      throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + e.benchmark + " is recorded as op '" + e.op +
                        "', which is not the op its name begins with (configs.json edited?)");
    }
    const auto op = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o->name() == e.op; });
    if (op == ops.end()) continue;  // an op this binary does not have: its families do not exist
    const std::string device = (*op)->needs_gpu() ? context.device.name : context.host_name;
    if (e.kernel_version != (*op)->kernel_version() || e.device != device) {
      throw ReplayError("REPLAY_FROM=" + dir.string() + ": " + e.benchmark + " was recorded with " + e.kernel_version +
                        " on " + e.device + ", this run has " + (*op)->kernel_version() + " on " + device +
                        ": a replay must run the same kernels on the same device");
    }
    context.replay.emplace(e.benchmark, std::move(e));
  }
  // Not refused (a run that ran nothing records nothing, and is a run), but an A/B that replays
  // nothing is no A/B: said now, and each benchmark is named at the end as not replayed.
  if (context.replay.empty()) {
    std::cerr << "bench: WARNING: REPLAY_FROM=" << dir.string() << ": configs.json "
              << (recorded.empty() ? "records no benchmarks" : "records only ops this build does not have")
              << ": nothing is replayed; every benchmark gets its config as in a normal run\n";
  }
}

}  // namespace tunebench
