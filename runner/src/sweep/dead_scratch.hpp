#pragma once
// The scratch folders of sweeps (tunebench-warmup-*, tunebench-mpi-* under TMPDIR) whose bench
// is gone: a SIGKILL leaves them behind. Each folder names its owner; a later run merges what a
// dead owner's workers finished into the owner's cache and removes the folder, or keeps it while
// that cache cannot take the keys, so that none is lost.

#include <filesystem>
#include <vector>

#include "context/run_context.hpp"
#include "settings/settings.hpp"

namespace tunebench {

/// Writes `dir`/owner: this process (host, boot and pid namespace, pid, start time; lease.hpp's
/// LeaseHolder) and the cache its sweep stores into (`cache`, absolute; empty: none).
/// Best effort: a folder without it is never judged dead.
void write_scratch_owner(const std::filesystem::path& dir, const std::filesystem::path& cache);

/// The scratch folders of dead runs that find_dead_scratch found.
struct DeadScratchFolders {
  std::filesystem::path tmp;                   ///< the folder searched: TMPDIR, else /tmp
  std::vector<std::filesystem::path> folders;  ///< the dead runs' scratch folders in it
};

/// The scratch folders under TMPDIR (settings.tmp_dir, else /tmp) whose owner file names a
/// process of this host that is gone (cache::holder_is_gone). Folders of live processes, of
/// other hosts or pid namespaces, and without an owner file are not among them. Reads only (a
/// check says how many a run would merge); never throws: a TMPDIR that cannot be read gives none.
DeadScratchFolders find_dead_scratch(const Settings& settings);

/// What clean_dead_scratch did.
struct DeadScratch {
  int folders = 0;     ///< scratch folders of dead runs removed: their keys merged, or none to merge
  int keys = 0;        ///< finished keys of their workers merged into their caches
  int kept = 0;        ///< folders kept: their cache could not take their keys (missing, read-only, busy)
  int unreadable = 0;  ///< worker stores of removed folders that could not be read (their keys lost)
};

/// Merges the finished keys of every find_dead_scratch folder's workers (a parallel warmup's
/// shard-*.sqlite, an MPI rank's child-*.sqlite) into the owner's cache (context.cache when it
/// is that file) and removes the folder. A folder whose keys that cache cannot take (missing,
/// read-only, locked, damaged) is kept, whole, for a later run to merge; one whose owner had no
/// cache, or whose workers finished nothing, is removed. Says what it did in one line on stderr
/// when it removed or kept any. Never throws: scratch that cannot be judged or removed is left.
DeadScratch clean_dead_scratch(const Settings& settings, const RunContext& context);

}  // namespace tunebench
