#pragma once
// The command line of one bench process: tunebench's settings, and what bench must know of
// Google Benchmark's flags before Google Benchmark consumes them.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "settings/settings.hpp"

namespace tunebench {

/// One bench process's command line.
class Invocation {
 public:
  /// Reads argv (tunebench's flags removed, the settings table parsed). Throws
  /// std::invalid_argument (one line) for a bad tunebench flag or variable, a
  /// --benchmark_format / --benchmark_out_format other than console, json or csv (Google
  /// Benchmark would answer it with its usage text and exit status 0), a
  /// --benchmark_repetitions that is not 1 to 100000, a --benchmark_min_time that is not
  /// plain seconds (Google Benchmark 1.8's "100x" or "1s"), or a --benchmark_time_unit other
  /// than ns, us, ms or s (Google Benchmark would print its usage and exit with status 0).
  Invocation(int argc, char** argv, const std::filesystem::path& default_shapes);

  const Settings& settings() const { return settings_; }
  /// For the MPI launch alone (MpiSession::start points CUDA_VISIBLE_DEVICES at the rank's GPU),
  /// before anything else reads the settings.
  Settings& launch_settings() { return settings_; }
  /// argv[1..] as given: a sweep's child processes get the same arguments.
  const std::vector<std::string>& original_args() const { return original_args_; }
  /// argv as given, argv[0] included, for the manifest.
  const std::vector<std::string>& command() const { return command_; }
  bool listing() const { return listing_; }               ///< --benchmark_list_tests (not under --tunebench_check=1)
  bool checking() const { return settings_.check_only; }  ///< --tunebench_check=1: check, then exit
  bool help() const { return help_; }                     ///< --help (Google Benchmark prints its usage and exits)
  bool filter_given() const { return filter_given_; }     ///< --benchmark_filter
  /// Google Benchmark's console format on stdout (the latency table joins it).
  bool console() const { return console_; }
  bool tabular() const { return tabular_; }  ///< --benchmark_counters_tabular
  /// --benchmark_format and --benchmark_out_format: "console", "json" or "csv".
  const std::string& format() const { return format_; }
  const std::string& out_format() const { return out_format_; }
  /// Whether this process makes a run directory (not a listing, not --help, not a sweep worker,
  /// not a check).
  bool makes_run_dir() const { return !listing_ && !help_ && settings_.shard < 0 && !settings_.check_only; }

  /// Points Google Benchmark's output at `run_dir`/results.json (results.txt, results.csv after
  /// --benchmark_out_format) unless --benchmark_out names a file, and --benchmark_out at
  /// "<file>.incomplete", so an interrupted run leaves an earlier file intact and never a
  /// truncated one. Returns the final output path ("" when there is none). Call once.
  std::string route_output(const std::filesystem::path& run_dir);
  /// Whether the console output is coloured: --benchmark_color's value read as Google Benchmark
  /// reads it (true/yes/1..., false/no/0/off), `automatic` for "auto" or no flag. Google
  /// Benchmark does not apply it itself here: bench makes the console reporter.
  bool colour(bool automatic) const;
  /// Paths that would only fail after the whole run, checked before it starts: --benchmark_out
  /// a folder or in a missing folder, TUNEBENCH_KERNEL_CACHE not a folder. Throws
  /// std::invalid_argument naming the flag or variable.
  void check_paths(const std::string& out_file) const;
  /// The runs folder (--tunebench_runs, TUNEBENCH_RUNS, else "runs") before a run directory is
  /// made in it: a folder this user can write into, or one that can be made (the first of its
  /// folders that exists is a writable folder). Throws std::invalid_argument naming the flag or
  /// variable, what is there and what was expected.
  void check_runs_folder() const;
  /// The runs folder as errors name it: "TUNEBENCH_RUNS='DIR'" or "--tunebench_runs='DIR'" as
  /// given, else "runs folder 'runs' (the default; TUNEBENCH_RUNS or --tunebench_runs choose
  /// another)".
  std::string runs_folder_name() const;

  /// The argument vector for Google Benchmark (after route_output); valid while this lives.
  int* argc() { return &argc_; }
  char** argv() { return args_.data(); }

 private:
  bool has_flag(const std::string& flag) const;
  /// The values of every argument "<flag>value" (flag ends with '='), in order.
  std::vector<std::string_view> values_of(std::string_view flag) const;
  void check_repetitions() const;
  void check_min_time() const;
  void check_time_unit() const;
  Settings settings_;
  std::vector<std::string> original_args_, command_;
  bool listing_ = false, help_ = false, filter_given_ = false, console_ = true, tabular_ = false;
  std::string format_ = "console", out_format_ = "json";
  std::vector<std::unique_ptr<std::string>> storage_;  // rewritten arguments
  std::vector<char*> args_;
  int argc_ = 0;
};

/// `p` as an absolute, normal path ("" stays ""): a run folder says where things were, whatever
/// folder bench was started in.
std::string absolute_text(const std::filesystem::path& p);

}  // namespace tunebench
