// The worker side of ChildProcessExecutor: a child process tuning the keys of its list.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "common/c_numbers.hpp"
#include "context/config_choice.hpp"
#include "sweep/compile_pool.hpp"
#include "sweep/executor.hpp"
#include "sweep/host_cores.hpp"
#include "sweep/shard_plan.hpp"
#include "sweep/worker_record.hpp"

namespace tunebench {
namespace {

// disagree-shard=I: shard I reports as winner a config of the expanded space outside the swept
// one, which no honest sweep of the other shard can pick, and names it a finalist, so the
// measurement GPU's re-timing has to judge it.
void inject_disagreement(const Family& f, const RunContext& context, SweepStats& stats) {
  if (!context.cache) return;
  const auto key = cache_key(*f.op, f.shape, context);
  const auto swept = f.op->config_space(context.tune.space);
  for (const auto& c : f.op->config_space(SpaceKind::kExpanded)) {
    if (std::find(swept.begin(), swept.end(), c) == swept.end() && f.op->can_implement(c, f.shape, context.device)) {
      context.cache->store(key, {}, cache::Best{c.str(), 1, 0});
      stats.finalists.push_back(c);
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
  ChoiceLog choices;  // this process's own: its results reach the parent through its cache file
  std::string current;
  bool gpu_key = false;
  double compile_wait_s = 0;  // the current key's
  // Beside the list, in the sweep's scratch folder: shared by this sweep's shards alone.
  const std::filesystem::path dir = std::filesystem::path(list_file).parent_path();
  CompiledKeys compiled(compiled_keys_file(dir));
  context.tune.on_progress = [&](const std::string& activity, bool compiling) {
    WorkerRecord r;
    r.kind = compiling ? WorkerRecord::Kind::kCompiling : WorkerRecord::Kind::kTiming;
    r.key = current;
    if (!compiling) r.config = activity;
    records.write(r);
  };
  const Op* current_op = nullptr;
  if (compiled.active()) {
    // A GPU key's configs are compiled by the pool and waited for one by one, right before each
    // one's first run: the key's first configs are timed while the pool compiles the rest (and
    // preparing the workload overlaps them all). A host op's key is waited for whole, below.
    context.tune.precompile = false;
    context.tune.before_new_config = [&](const std::string& config) {
      if (!gpu_key || !current_op) return;
      compile_wait_s += compiled.wait_for_config(current_op->name(), config, current, [&] {
        records.write({WorkerRecord::Kind::kCompiling, current, "", 0, ""});
      });
    };
  }
  const std::string visible = settings.visible_devices.value_or("(unset)");
  const std::string uuid =
      context.gpu_available && !context.device.uuid.empty() ? " (" + context.device.uuid + ")" : "";
  // The card's own UUID beside the token, so a run shows which physical GPU each shard swept on.
  std::cerr << "tunebench-shard: CUDA_VISIBLE_DEVICES="
            << (visible.empty() ? "(empty: no GPU, host ops only)" : visible) << uuid << "\n";
  records.write({WorkerRecord::Kind::kStarted, "", "", 0, visible + uuid});
  HostCores host_cores(host_cores_file(dir));
  // One key: 0 to go on, else the process's exit status.
  const auto tune = [&](const Family& f) -> int {
    const std::string& name = f.name;
    current = name;
    // A host op's configs are waited for before the host's cores (the compile pool holds them
    // while it compiles: never wait for it holding them), a GPU key's in on_progress.
    gpu_key = f.op->needs_gpu();
    current_op = f.op.get();
    compile_wait_s = 0;
    if (!gpu_key) {
      compile_wait_s = compiled.wait_for(name, [&] {
        records.write({WorkerRecord::Kind::kCompiling, name, "", 0, ""});
      });
    }
    // A host op is prepared and timed only while this shard holds the host's cores; its seconds
    // start when it has them, so they count tuning, not waiting.
    auto cores = f.op->needs_gpu() ? HostCores::none() : host_cores.hold([&] {
      records.write({WorkerRecord::Kind::kWaiting, name, "", 0, ""});
    });
    const auto key_started = std::chrono::steady_clock::now();
    records.write({WorkerRecord::Kind::kPreparing, name, "", 0, ""});
    SweepStats stats;
    try {
      ensure_tuned(f, context, choices, nullptr, &stats);
    } catch (const StickyCudaError& e) {
      // The failing config is stored; this process's GPU context is gone. Stop: the parent
      // starts a fresh shard for the keys left.
      std::cerr << "tunebench-shard: " << name << ": " << e.what() << "\n";
      return 3;
    }
    try {
      if (settings.fault.disagree_shard == shard) inject_disagreement(f, context, stats);
    } catch (const std::exception& e) {
      std::cerr << "tunebench-shard: " << name << ": " << e.what() << "\n";
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - key_started).count();
    WorkerRecord tuned{WorkerRecord::Kind::kTuned, name, "", seconds, ""};
    tuned.runs = stats.runs;
    tuned.kernel_s = static_cast<double>(stats.kernel_ns) * 1e-9;
    tuned.dropped = stats.dropped;
    tuned.pruned = stats.pruned;
    tuned.compile_wait_s = compile_wait_s + static_cast<double>(stats.compile_ns) * 1e-9;
    for (const auto& c : stats.finalists) tuned.finalists.push_back(c.str());
    records.write(tuned);
    std::cerr << "tunebench-shard: tuned " << name << " in " << format_c("%.2f", seconds) << " s\n";
    cores.reset();
    if (settings.fault.abort_shard == shard) std::abort();
    return 0;
  };
  const auto family_of = [&](const std::string& name) -> const Family* {
    const auto it = std::find_if(families.begin(), families.end(), [&](const Family& f) { return f.name == name; });
    if (it == families.end()) std::cerr << "tunebench-shard: unknown benchmark " << name << "\n";
    return it == families.end() ? nullptr : &*it;
  };
  std::string name;
  std::error_code ec;
  if (std::filesystem::is_fifo(list_file, ec)) {
    // An MPI rank feeds its child one key at a time: tuned in the order they come.
    while (std::getline(in, name)) {
      const Family* f = family_of(name);
      if (!f) return 2;
      if (const int status = tune(*f)) return status;
    }
    return 0;
  }
  // A whole list: the keys the compile pool has finished first (ready_key), so this worker does
  // not wait at a key whose op's configs the pool compiles later while others are ready.
  std::vector<const Family*> mine;
  std::vector<std::string> group;
  while (std::getline(in, name)) {
    const Family* f = family_of(name);
    if (!f) return 2;
    mine.push_back(f);
    group.push_back(pruning_group(*f));
  }
  std::vector<std::size_t> left(mine.size());
  for (std::size_t i = 0; i < left.size(); ++i) left[i] = i;
  // A host op's key is never taken ahead of a compiled GPU key: the pool holds the host's cores
  // while it compiles, so a worker that took it early would wait for them with its GPU idle.
  const auto ready = [&](std::size_t k) {
    if (!compiled.active()) return true;
    return mine[k]->op->needs_gpu() && compiled.announced(mine[k]->name);
  };
  while (!left.empty()) {
    const std::size_t at = ready_key(left, group, ready);
    const std::size_t k = left[at];
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(at));
    if (const int status = tune(*mine[k])) return status;
  }
  return 0;
}

}  // namespace tunebench
