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

// The finished entries of the folder's workers, and how many of their stores could not be read
// (damaged beyond reading, they never will be: their keys are tuned again when needed).
struct Finished {
  std::vector<cache::ConfigCache::Entry> entries;
  int unreadable = 0;
};

Finished read_finished(const fs::path& dir) {
  Finished f;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!worker_store(it->path())) continue;
    try {
      cache::ConfigCache shard(it->path(), cache::ConfigCache::OnDamage::kThrow);
      for (auto& entry : shard.entries()) {
        if (entry.best) f.entries.push_back(std::move(entry));
      }
    } catch (const std::exception&) {
      ++f.unreadable;
    }
  }
  return f;
}

// Stores `entries` into `file`, the dead run's cache (context.cache when it is that file), in one
// transaction: "" once they are in it, else why not (one line naming the cache). A missing cache
// is not made anew: the file its run had may come back (a file system not mounted yet), and the
// keys wait for it in their folder.
std::string merge_into(const fs::path& file, const RunContext& context,
                       const std::vector<cache::ConfigCache::Entry>& entries) {
  const std::string name = "config cache " + file.string();
  try {
    if (context.cache && same_file(file, context.cache->path())) {
      if (context.cache->read_only()) return name + " is read-only";
      context.cache->store(entries);
      return "";
    }
    std::error_code ec;
    if (!fs::exists(file, ec) && !ec) return name + " is missing";
    cache::ConfigCache other(file, cache::ConfigCache::OnDamage::kThrow);
    if (other.read_only()) return name + " is read-only";
    other.store(entries);
    return "";
  } catch (const std::exception& ex) {
    return ex.what();
  }
}

}  // namespace

void write_scratch_owner(const fs::path& dir, const fs::path& cache) {
  const cache::LeaseHolder me = cache::this_process();
  std::error_code ec;
  std::ofstream out(dir / "owner");
  out << "pid=" << me.pid << "\nstarted=" << me.started << "\ninstance=" << me.instance << "\nhost=" << me.host
      << "\ncache=" << (cache.empty() ? std::string() : fs::absolute(cache, ec).string()) << "\n";
}

DeadScratchFolders find_dead_scratch(const Settings& settings) {
  DeadScratchFolders found;
  found.tmp = settings.tmp_var.empty() ? fs::path("/tmp") : fs::path(settings.tmp_dir);
  std::error_code ec;
  for (fs::directory_iterator it(found.tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("tunebench-warmup-", 0) != 0 && name.rfind("tunebench-mpi-", 0) != 0) continue;
    std::error_code dir_ec;
    if (!it->is_directory(dir_ec) || it->is_symlink(dir_ec)) continue;
    const auto owner = read_owner(it->path());
    if (owner && cache::holder_is_gone(owner->holder)) found.folders.push_back(it->path());
  }
  return found;
}

DeadScratch clean_dead_scratch(const Settings& settings, const RunContext& context) {
  DeadScratch done;
  const DeadScratchFolders dead = find_dead_scratch(settings);
  std::set<std::string> into;  // the owners' caches that took keys, as their owner files name them
  std::set<std::string> why_kept;
  int merged_folders = 0;
  for (const auto& dir : dead.folders) {
    const auto owner = read_owner(dir);
    if (!owner) continue;  // its owner file went meanwhile: another run cleaned it
    Finished finished = read_finished(dir);
    std::set<cache::Key> keys;
    for (const auto& e : finished.entries) keys.insert(e.key);
    // An owner without a cache stored nothing, and its keys have nowhere to go: nothing to keep.
    if (!keys.empty() && !owner->cache.empty()) {
      if (const std::string why = merge_into(owner->cache, context, finished.entries); !why.empty()) {
        // Removing the folder would lose keys its workers finished: a later run merges them.
        ++done.kept;
        why_kept.insert(escape_controls(why));
        continue;
      }
      done.keys += static_cast<int>(keys.size());
      ++merged_folders;
      into.insert(owner->cache.string());
    }
    std::error_code rm;
    fs::remove_all(dir, rm);
    if (!rm) {
      ++done.folders;
      done.unreadable += finished.unreadable;
    }
  }
  if (done.folders == 0 && done.kept == 0) return done;
  // The keys go to each dead run's own cache (its owner file's), which need not be this run's:
  // the line names the files, and for a folder kept, why its cache could not take them.
  const std::string of_sweeps = " of sweeps whose bench is gone (killed) under " + escape_controls(dead.tmp.string());
  std::string removed, kept;
  if (done.folders > 0) {
    std::string files;
    for (const auto& f : into) files += (files.empty() ? "" : ", ") + escape_controls(f);
    removed = "removed " + count_of(done.folders, "scratch folder", "scratch folders") + of_sweeps + "; " +
              (done.keys == 0 ? std::string("no finished key from them merged")
                              : count_of(done.keys, "finished key", "finished keys") + " from them merged into the " +
                                    (merged_folders > 1 ? "dead runs' own " : "dead run's own ") +
                                    (into.size() > 1 ? "caches " : "cache ") + files);
    if (done.unreadable > 0) {
      removed += " (" + count_of(done.unreadable, "worker store", "worker stores") +
                 " could not be read: " + (done.unreadable > 1 ? "their" : "its") +
                 " keys are tuned again when needed)";
    }
  }
  if (done.kept > 0) {
    std::string why;
    for (const auto& w : why_kept) why += (why.empty() ? "" : "; ") + w;
    kept = "kept " + count_of(done.kept, "scratch folder", "scratch folders") + (done.folders > 0 ? "" : of_sweeps) +
           " for a later run to merge: " +
           (done.kept > 1 ? "their finished keys could not be merged into the dead runs' own caches ("
                          : "its finished keys could not be merged into the dead run's own cache (") +
           why + ")";
  }
  const std::string line = removed + (removed.empty() || kept.empty() ? "" : "; ") + kept;
  std::cerr << "bench: " << line << "\n";
  return done;
}

}  // namespace tunebench
