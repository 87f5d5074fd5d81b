// The worker side of ChildProcessExecutor: a child process tuning the keys of its list.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "common/c_numbers.hpp"
#include "sweep/executor.hpp"
#include "sweep/worker_record.hpp"
#include "tune/config_choice.hpp"

namespace tunebench {
namespace {

// disagree-shard=I: shard I reports as winner a config of the expanded space outside the swept
// one, which no honest sweep of the other shard can pick.
void inject_disagreement(const Family& f, const RunContext& context) {
  if (!context.cache) return;
  const auto key = cache_key(*f.op, f.shape, context);
  const auto swept = f.op->config_space(context.tune.space);
  for (const auto& c : f.op->config_space(SpaceKind::kExpanded)) {
    if (std::find(swept.begin(), swept.end(), c) == swept.end() && f.op->can_implement(c, f.shape, context.device)) {
      context.cache->store(key, {}, cache::Best{c.str(), 1, 0});
      return;
    }
  }
}

}  // namespace

int run_shard(const std::vector<Family>& families, const RunContext& shared_context, const Settings& settings) {
  const int shard = settings.shard;
  const std::string& list_file = settings.shard_list;
  std::ifstream in(list_file);
  if (!in) {
    std::cerr << "tunebench-shard: cannot read " << list_file << "\n";
    return 2;
  }
  RecordWriter records(list_file + ".records");
  RunContext context = shared_context;
  std::string current;
  context.tune.on_progress = [&](const std::string& activity, bool compiling) {
    WorkerRecord r;
    r.kind = compiling ? WorkerRecord::Kind::kCompiling : WorkerRecord::Kind::kTiming;
    r.key = current;
    if (!compiling) r.config = activity;
    records.write(r);
  };
  const std::string visible = settings.visible_devices.value_or("(unset)");
  const std::string uuid = context.gpu_available && !context.device.uuid.empty() ? " (" + context.device.uuid + ")" : "";
  // The card's own UUID beside the token, so a run shows which physical GPU each shard swept on.
  std::cerr << "tunebench-shard: CUDA_VISIBLE_DEVICES=" << visible << uuid << "\n";
  records.write({WorkerRecord::Kind::kStarted, "", "", 0, visible + uuid});
  std::string name;
  while (std::getline(in, name)) {
    const auto key_started = std::chrono::steady_clock::now();
    current = name;
    records.write({WorkerRecord::Kind::kPreparing, name, "", 0, ""});
    const auto it = std::find_if(families.begin(), families.end(), [&](const Family& f) { return f.name == name; });
    if (it == families.end()) {
      std::cerr << "tunebench-shard: unknown benchmark " << name << "\n";
      return 2;
    }
    try {
      ensure_tuned(*it, context);
    } catch (const StickyCudaError& e) {
      // The failing config is stored; this process's GPU context is gone. Stop: the parent
      // starts a fresh shard for the keys left.
      std::cerr << "tunebench-shard: " << name << ": " << e.what() << "\n";
      return 3;
    }
    try {
      if (settings.fault.disagree_shard == shard) inject_disagreement(*it, context);
    } catch (const std::exception& e) {
      std::cerr << "tunebench-shard: " << name << ": " << e.what() << "\n";
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - key_started).count();
    records.write({WorkerRecord::Kind::kTuned, name, "", seconds, ""});
    std::cerr << "tunebench-shard: tuned " << name << " in " << format_c("%.2f", seconds) << " s\n";
    if (settings.fault.abort_shard == shard) std::abort();
  }
  return 0;
}

}  // namespace tunebench
