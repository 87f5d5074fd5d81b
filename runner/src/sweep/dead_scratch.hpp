#pragma once
// The scratch folders of sweeps (tunebench-warmup-*, tunebench-mpi-* under TMPDIR) whose bench
// is gone: a SIGKILL leaves them behind. Each folder names its owner; a later run merges what a
// dead owner's workers finished into the owner's cache and removes the folder.

#include <filesystem>

#include "context/run_context.hpp"
#include "settings/settings.hpp"

namespace tunebench {

/// Writes `dir`/owner: this process (host, boot and pid namespace, pid, start time; lease.hpp's
/// LeaseHolder) and the cache its sweep stores into (`cache`, absolute; empty: none).
/// Best effort: a folder without it is never judged dead.
void write_scratch_owner(const std::filesystem::path& dir, const std::filesystem::path& cache);

/// What clean_dead_scratch did.
struct DeadScratch {
  int folders = 0;   ///< scratch folders of dead runs removed
  int keys = 0;      ///< finished keys of their workers merged into their caches
  int unmerged = 0;  ///< folders whose cache could not take their keys (missing, read-only, busy)
};

/// Removes every scratch folder under TMPDIR (settings.tmp_dir, else /tmp) whose owner file
/// names a process of this host that is gone (cache::holder_is_gone), after merging its
/// workers' finished keys (a parallel warmup's shard-*.sqlite, an MPI rank's child-*.sqlite)
/// into the owner's cache (context.cache when it is that file). Folders of live processes, of
/// other hosts or pid namespaces, and without an owner file are left alone. Says what it did in
/// one line on stderr when it removed any. Never throws: scratch that cannot be judged or removed
/// is left.
DeadScratch clean_dead_scratch(const Settings& settings, const RunContext& context);

}  // namespace tunebench
