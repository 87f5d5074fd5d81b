#include "report/run_dir.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <exception>
#include <fstream>
#include <iostream>

#include "common/atomic_file.hpp"
#include "common/one_line.hpp"
#include "common/plural.hpp"
#include "context/context_setup.hpp"
#include "cuda/gpu_clock.hpp"
#include "timing/op_timing.hpp"
#include "tunebench/version.hpp"

namespace tunebench {
namespace {

// The machine's name, as the JSON context's tunebench_host gives it.
std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

namespace fs = std::filesystem;

// The measurement GPU's SM clock now, for the manifest.
std::string sm_clock_text(const RunContext& context) {
  if (!context.gpu_available) return "";
  const SmClock clock = read_sm_clock(context.device.ordinal);
  return clock.mhz ? std::to_string(*clock.mhz) : "unknown (" + clock.error + ")";
}

// Benchmarks of a replay that were not in it (or failed there) and got their configs live.
std::vector<std::string> tuned_live(const RunContext& context, const RunRecord& record) {
  std::vector<std::string> live;
  if (context.replay_source.empty()) return live;  // not a replay
  for (const auto& e : record.entries()) {
    if (e.source != ConfigSource::kReplayed) live.push_back(e.benchmark);
  }
  return live;
}

}  // namespace

RunDir::RunDir(bool claim, const Invocation& inv) {
  if (!claim) return;
  const fs::path& runs = inv.settings().runs;
  std::error_code ec;
  for (auto p = fs::absolute(runs, ec); !ec && !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made_roots_.push_back(p);
    if (p == p.parent_path()) break;
  }
  try {
    dir_ = claim_run_dir(runs, std::time(nullptr));
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(inv.runs_folder_name() + ": " + e.what() +
                                ", expected a folder to make run directories in");
  }
}

RunDir::~RunDir() {
  if (dir_.empty()) return;
  std::error_code ec;
  if (std::uncaught_exceptions() > 0) {
    std::size_t entries = 0;
    bool manifest_only = true;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      ++entries;
      manifest_only &= e.path().filename() == "manifest.json";
    }
    if (!ec && entries == 1 && manifest_only) fs::remove(dir_ / "manifest.json", ec);
  }
  if (fs::is_empty(dir_, ec)) fs::remove(dir_, ec);
  for (const auto& p : made_roots_) {
    if (!fs::is_empty(p, ec) || ec) break;
    fs::remove(p, ec);
  }
}

void RunDir::write_manifest(const RunContext& context, const RunRecord& record, const ChoiceLog& choices,
                            const Invocation& inv, const std::string& results, bool complete) const {
  const Settings& s = inv.settings();
  std::error_code ec;
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [name, value] : manifest_environment()) env[name] = value;
  const nlohmann::json manifest = {
      {"status", complete ? "complete" : "running"},
      {"status_note", complete ? "" : "if no bench is running any more, this run was interrupted"},
      {"results", complete ? results : results + ".incomplete"},
      {"command", inv.command()},
      {"cwd", fs::current_path(ec).string()},
      {"env", env},
      {"device", context.gpu_available ? context.device.name : "none (" + context.gpu_reason + ")"},
      {"device_uuid", context.gpu_available ? context.device.uuid : ""},
      {"cpu", context.host_name},
      {"host", host_name()},
      {"timing_mode", run_timing_name(context)},
      {"gpu_sm_clock_mhz_end", sm_clock_text(context)},
      {"cuda_toolkit", context.cuda_toolkit},
      {"tunebench_version", kVersion},
      {"tunebench_git_revision", kGitRevision},
      {"shapes", absolute_text(s.shapes)},
      {"cache", context.cache ? absolute_text(context.cache->path()) : ""},
      {"replay_from", absolute_text(s.replay_from)},
      {"replay_tuned_live", tuned_live(context, record)},
      {"replay_markers", choices.markers()}};
  write_file_atomically(dir_ / "manifest.json", manifest.dump(2) + "\n");
}

void RunDir::finish(const RunContext& context, const RunRecord& record, const ChoiceLog& choices, const Invocation& inv,
                    const std::string& results, const BencherFile& dashboard) const {
  record.write(dir_);
  dashboard.write(dir_);
  write_manifest(context, record, choices, inv, results, true);
  if (const auto live = tuned_live(context, record); !live.empty()) {
    const bool one = live.size() == 1;
    // Named, the first few: an A/B whose replay fell back on one benchmark is told which one.
    constexpr std::size_t kNamed = 3;
    std::string names;
    for (std::size_t i = 0; i < std::min(live.size(), kNamed); ++i) names += (i ? ", " : "") + escape_controls(live[i]);
    if (live.size() > kNamed) names += ", and " + std::to_string(live.size() - kNamed) + " more";
    std::cerr << "bench: WARNING: " << count_of(static_cast<long long>(live.size()), "benchmark was", "benchmarks were")
              << " not in " << inv.settings().replay_from.string()
              << ", or had a recorded config that could not run here or failed, and got "
              << (one ? "its config" : "their configs") << " as in a normal run: from the cache or tuned now (" << names
              << "; configs.json says which; manifest.json lists " << (one ? "it" : "them all") << ")\n";
  }
  std::cerr << "bench: run directory " << dir_.string() << "\n";
}

}  // namespace tunebench
