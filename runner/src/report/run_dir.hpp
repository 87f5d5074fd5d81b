#pragma once
// A run's directory: results, configs.json, latency.md, bencher.json and manifest.json (README: "Run
// directories, record and replay").

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "context/choice_log.hpp"
#include "context/run_context.hpp"
#include "context/run_record.hpp"
#include "report/bencher_file.hpp"
#include "settings/invocation.hpp"

namespace tunebench {

/// The run directory of one bench process, claimed at construction (claim_run_dir under
/// settings.runs) unless `claim` is false. A run that an error ends before it measured anything
/// leaves no directory behind: none that is empty, none that holds only its manifest, and not the
/// runs folder it made for it (checked when this is destroyed during stack unwinding, or empty).
class RunDir {
 public:
  /// Claims one under inv.settings().runs when `claim`. Throws std::invalid_argument naming the
  /// runs folder's setting (Invocation::runs_folder_name), the path and the system's reason when
  /// the folder cannot be made (what check_runs_folder cannot foresee: /proc refuses even root).
  RunDir(bool claim, const Invocation& inv);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }  ///< "" when not claimed
  bool claimed() const { return !dir_.empty(); }

  /// manifest.json: status "running" (before the sweep and the benchmarks, so a run interrupted
  /// by Ctrl-C leaves a directory that says so) or "complete"; the command, cwd, the manifest
  /// variables of the settings table, device, versions, paths and where the results go; from
  /// `record` (the configs used so far) and `choices` (replay fallbacks), the benchmarks of a
  /// replay tuned live and the fallbacks' markers.
  void write_manifest(const RunContext& context, const RunRecord& record, const ChoiceLog& choices,
                      const Invocation& inv, const std::string& results, bool complete) const;
  /// configs.json (`record`), bencher.json (`dashboard`) and the final manifest, then what the
  /// user should know (benchmarks of a replay that were tuned live; where the run directory is)
  /// on stderr.
  void finish(const RunContext& context, const RunRecord& record, const ChoiceLog& choices, const Invocation& inv,
              const std::string& results, const BencherFile& dashboard) const;

 private:
  std::filesystem::path dir_;
  std::vector<std::filesystem::path> made_roots_;  // folders claiming created, innermost first
};

}  // namespace tunebench
