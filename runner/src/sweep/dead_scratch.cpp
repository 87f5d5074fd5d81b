// Scratch folders of sweeps whose bench is gone (dead_scratch.hpp).

#include "sweep/dead_scratch.hpp"

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/one_line.hpp"
#include "common/plural.hpp"
#include "tunebench/cache/lease.hpp"

namespace tunebench {
namespace {

namespace fs = std::filesystem;

struct Owner {
  cache::LeaseHolder holder;
  fs::path cache;
};

std::optional<Owner> read_owner(const fs::path& dir) {
  std::ifstream in(dir / "owner");
  if (!in) return std::nullopt;
  std::map<std::string, std::string> fields;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  Owner o;
  try {
    o.holder.pid = std::stoll(fields.at("pid"));
    o.holder.started = std::stoll(fields.at("started"));
    o.holder.instance = fields.at("instance");
    o.holder.host = fields["host"];
    o.cache = fields["cache"];
  } catch (const std::exception&) {
    return std::nullopt;  // not ours to judge
  }
  return o;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

// Whether `file` is a worker's store: a parallel warmup's shard-N.sqlite, or the store of an MPI
// rank's child, child-N.sqlite (one per child the rank started).
bool worker_store(const fs::path& file) {
  const std::string name = file.filename().string();
  return (name.rfind("shard-", 0) == 0 || name.rfind("child-", 0) == 0) && file.extension() == ".sqlite";
}

// The finished keys of the folder's workers, merged into `into` in one transaction; their count.
int merge_shards(const fs::path& dir, cache::ConfigCache& into) {
  std::vector<cache::ConfigCache::Entry> merged;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!worker_store(e.path())) continue;
    cache::ConfigCache shard(e.path(), cache::ConfigCache::OnDamage::kThrow);
    for (auto& entry : shard.entries()) {
      if (entry.best) merged.push_back(std::move(entry));
    }
  }
  if (!merged.empty()) into.store(merged);
  std::set<cache::Key> keys;
  for (const auto& e : merged) keys.insert(e.key);
  return static_cast<int>(keys.size());
}

}  // namespace

void write_scratch_owner(const fs::path& dir, const fs::path& cache) {
  const cache::LeaseHolder me = cache::this_process();
  std::error_code ec;
  std::ofstream out(dir / "owner");
  out << "pid=" << me.pid << "\nstarted=" << me.started << "\ninstance=" << me.instance << "\nhost=" << me.host
      << "\ncache=" << (cache.empty() ? std::string() : fs::absolute(cache, ec).string()) << "\n";
}

DeadScratch clean_dead_scratch(const Settings& settings, const RunContext& context) {
  DeadScratch done;
  const fs::path tmp = settings.tmp_var.empty() ? fs::path("/tmp") : fs::path(settings.tmp_dir);
  std::error_code ec;
  std::vector<fs::path> dead;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("tunebench-warmup-", 0) != 0 && name.rfind("tunebench-mpi-", 0) != 0) continue;
    std::error_code dir_ec;
    if (!it->is_directory(dir_ec) || it->is_symlink(dir_ec)) continue;
    const auto owner = read_owner(it->path());
    if (owner && cache::holder_is_gone(owner->holder)) dead.push_back(it->path());
  }
  if (dead.empty()) return done;
  std::set<std::string> into;  // the owners' caches that took keys, as their owner files name them
  for (const auto& dir : dead) {
    const auto owner = read_owner(dir);
    try {
      int merged = 0;
      if (!owner->cache.empty()) {
        if (context.cache && same_file(owner->cache, context.cache->path())) {
          if (context.cache->read_only()) throw std::runtime_error("its cache is read-only");
          merged = merge_shards(dir, *context.cache);
        } else if (fs::exists(owner->cache, ec)) {
          cache::ConfigCache other(owner->cache, cache::ConfigCache::OnDamage::kThrow);
          if (other.read_only()) throw std::runtime_error("its cache is read-only");
          merged = merge_shards(dir, other);
        }
      }
      done.keys += merged;
      if (merged > 0) into.insert(owner->cache.string());
    } catch (const std::exception&) {
      ++done.unmerged;
    }
    std::error_code rm;
    fs::remove_all(dir, rm);
    if (!rm) ++done.folders;
  }
  if (done.folders > 0) {
    // The keys go to each dead run's own cache (its owner file's), which need not be this run's:
    // the line names the files.
    std::string files;
    for (const auto& f : into) files += (files.empty() ? "" : ", ") + escape_controls(f);
    const bool runs = dead.size() > 1;
    std::cerr << "bench: removed " << count_of(done.folders, "scratch folder", "scratch folders")
              << " of sweeps whose bench is gone (killed) under " << escape_controls(tmp.string()) << "; "
              << (done.keys == 0 ? std::string("no finished key from them merged")
                                 : count_of(done.keys, "finished key", "finished keys") +
                                       " from them merged into the " + (runs ? "dead runs' own " : "dead run's own ") +
                                       (into.size() > 1 ? "caches " : "cache ") + files)
              << (done.unmerged > 0 ? " (" + count_of(done.unmerged, "folder", "folders") +
                                          " whose dead run's cache could not take its keys: tuned again when needed)"
                                    : std::string())
              << "\n";
  }
  return done;
}

}  // namespace tunebench
