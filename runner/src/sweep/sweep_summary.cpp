// What the child-process executors say of a sweep: the summary lines on stderr and their
// entries of the JSON context (README: "Parallel warmup"). The MPI sweep's summary is the
// sharded one too, with ranks for shards.

#include <cstdio>

#include "common/c_numbers.hpp"
#include "common/plural.hpp"
#include "sweep/child_start.hpp"
#include "sweep/executor.hpp"

namespace tunebench {

std::string sharded_summary(const std::string& name, const SweepReport& w, const WorkerNouns& nouns) {
  std::string out = "bench: " + name + ": " + count_of(w.keys, "key", "keys") + " on " +
                    count_of(w.shards, nouns.worker, nouns.workers) + " in " + format_c("%.1f", w.seconds) + " s, " +
                    std::to_string(w.tuned) + " tuned, " +
                    count_of(w.crashed_shards, nouns.failed, nouns.failed_plural) + " failed, " +
                    count_of(static_cast<long long>(w.disagreeing.size()), "disagreement", "disagreements") + "\n";
  for (std::size_t i = 0; i < w.per_shard.size(); ++i) {
    char line[160];
    std::snprintf(line, sizeof line, "bench: %s %zu: %s, %.1f s tuning in %.1f s\n", nouns.line_label, i,
                  count_of(w.per_shard[i].keys, "key", "keys").c_str(), w.per_shard[i].tuning_s, w.per_shard[i].wall_s);
    out += line;
  }
  if (w.retimed > 0) {
    out += "bench: " + name + ": " + count_of(w.retimed, "key", "keys") +
           " re-timed by bench itself (finalists interleaved, " + std::to_string(w.retimed_on_gpu) +
           " on the measurement GPU), " + count_of(w.changed, "winner", "winners") + " changed\n";
  }
  if (!w.disagreeing.empty()) {
    std::string list;
    for (const auto& key : w.disagreeing) list += (list.empty() ? "" : " ") + key;
    out += "bench: WARNING: " + count_of(static_cast<long long>(w.disagreeing.size()), "key", "keys") +
           " got different winners on two shards (re-timed by bench itself): " + list + "\n";
  }
  return out;
}

std::string ChildProcessExecutor::summary(const SweepReport& w) const {
  if (!isolated_) return sharded_summary(name(), w, {"shard", "shards", "shard", "shards", "parallel warmup shard"});
  return "bench: isolated sweep: " + count_of(w.keys, "key", "keys") + " in a child process in " +
         format_c("%.1f", w.seconds) + " s, " + std::to_string(w.tuned) + " tuned, " +
         count_of(w.crashed_shards, "child process", "child processes") + " failed\n";
}

std::vector<ContextEntry> ChildProcessExecutor::context_entries(const SweepReport& w) const {
  if (isolated_) {
    return {{"tunebench_isolated_sweep_keys", std::to_string(w.keys)},
            {"tunebench_isolated_sweep_seconds", c_number(w.seconds)}};
  }
  std::string list;
  for (const auto& key : w.disagreeing) list += (list.empty() ? "" : " ") + key;
  // Which card each shard swept on: shard=entry, with the UUID the shard reported where known.
  std::string devices;
  for (std::size_t i = 0; i < w.per_shard.size(); ++i) {
    devices += (i ? ", " : "") + std::to_string(i) + "=" + w.per_shard[i].device;
  }
  return {{"parallel_warmup_gpus", std::to_string(shards_)},
          {"parallel_warmup_keys", std::to_string(w.keys)},
          {"parallel_warmup_seconds", c_number(w.seconds)},
          {"parallel_warmup_disagreements", std::to_string(w.disagreeing.size())},
          {"parallel_warmup_disagreeing_keys", list},
          {"parallel_warmup_retimed_keys", std::to_string(w.retimed)},
          {"parallel_warmup_changed_winners", std::to_string(w.changed)},
          {"parallel_warmup_shard_devices", devices}};
}

}  // namespace tunebench
