// bench's orchestration, as its stages: resolve settings, plan, sweep, settle configs, time,
// report, finish the run directory (docs/design.md).

#include "tunebench/main.hpp"
#include "tunebench/cache/write_error.hpp"
#include "tunebench/nvrtc.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "common/c_numbers.hpp"
#include "common/one_line.hpp"
#include "common/plural.hpp"
#include "context/config_choice.hpp"
#include "context/context_setup.hpp"
#include "plan/selection.hpp"
#include "report/baseline_speedup.hpp"
#include "report/bencher_file.hpp"
#include "report/c_number_reporter.hpp"
#include "report/json_context.hpp"
#include "report/latency_table.hpp"
#include "report/results_file.hpp"
#include "report/run_dir.hpp"
#include "report/timing_stage.hpp"
#include "run/benchmark_body.hpp"
#include "run/interrupt_note.hpp"
#include "settings/invocation.hpp"
#include "sweep/dead_scratch.hpp"
#include "sweep/mpi/mpi_executor.hpp"
#include "sweep/mpi/mpi_session.hpp"
#include "sweep/sweep_stage.hpp"
#include "timing/iteration_sizing.hpp"

namespace tunebench {
namespace {

struct Defaults {
  std::filesystem::path shapes;
  std::string gpu_filter, cpu_filter;
};

// Plan: families of every op on every set, and the filter this run selects with (the default
// one when none is given, to be announced without a GPU in `notice`). A listing shows every
// family whatever the machine; only a run narrows to the default.
BenchmarkFilter plan_selection(const Invocation& inv, const std::vector<Family>& families, const OpList& ops,
                               const GpuProbe& gpu, const Defaults& d, std::string& notice) {
  if (!inv.filter_given() && !inv.listing()) {
    const bool any_gpu_op = std::any_of(ops.begin(), ops.end(), [](const auto& op) { return op->needs_gpu(); });
    const std::string filter = default_filter(families, gpu.available() && any_gpu_op, d.gpu_filter, d.cpu_filter);
    benchmark::SetBenchmarkFilter(filter);
    if (!gpu.available()) {
      notice += "bench: no CUDA device (" + gpu.reason +
                "): GPU families skipped, running --benchmark_filter=" + filter + "\n";
    }
  }
  const BenchmarkFilter selected(benchmark::GetBenchmarkFilter());
  if (const auto n = selected_gpu_families(families, selected); n > 0 && !gpu.available() && !inv.listing()) {
    notice += "bench: no CUDA device (" + gpu.reason + "): " +
              count_of(static_cast<long long>(n), "selected GPU benchmark cannot", "selected GPU benchmarks cannot") +
              " run and will be reported as " + (n == 1 ? "an error" : "errors") +
              " (ERROR OCCURRED: 'no CUDA device: ...')\n";
  }
  return selected;
}

int no_match(const BenchmarkFilter& filter) {
  std::cerr << "bench: --benchmark_filter='" << escape_controls(filter.spec())
            << "' matches no benchmark (bench --benchmark_list_tests lists them)\n";
  return 1;
}

ChildLaunch self_launch(const Invocation& inv) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return {ec ? inv.command().front() : exe.string(), inv.original_args()};
}

// The sweep's plan: the keys to tune and their executor, with what would refuse it (the devices,
// a read-only cache) found before anything is announced, so bad input stays one line.
struct SweepPlan {
  std::vector<const Family*> untuned;
  std::unique_ptr<SweepExecutor> executor;
  DeadScratchFolders dead;  ///< a check's: the killed sweeps' scratch folders a run would merge first
};

SweepPlan plan_sweep(const Invocation& inv, const std::vector<Family>& families, const BenchmarkFilter& filter,
                     const RunContext& context, const ChoiceLog& choices, const GpuProbe& gpu) {
  // A sweep whose bench was killed left its scratch folder: what its workers finished counts
  // before the keys to tune are chosen. A check writes nothing: it leaves the folders to the run.
  DeadScratchFolders dead;
  if (inv.checking()) {
    dead = find_dead_scratch(inv.settings());
  } else {
    clean_dead_scratch(inv.settings(), context);
  }
  SweepPlan plan{untuned_families(families, filter, context, choices), nullptr, std::move(dead)};
  plan.executor = choose_executor(inv.settings(), families, plan.untuned, context, gpu, self_launch(inv));
  // A check opens the cache read-only itself: only a cache a run would find read-only is refused.
  const bool read_only = context.cache && (!inv.checking() || cache_read_only_for_a_run(context.cache->path()));
  if (plan.executor->sweeps_up_front() && read_only) {
    check_results_can_be_stored(plan.untuned, context, plan.executor->name());
  }
  return plan;
}

// --tunebench_check=1 passed everything a run checks before it measures: one line on stdout.
int check_passed(const std::vector<Family>& families, const BenchmarkFilter& filter, const RunContext& context,
                 const SweepPlan& plan) {
  std::vector<const Family*> chosen;
  for (const auto& f : families) {
    if (filter.selects(reported_name(f))) chosen.push_back(&f);
  }
  const auto selected = static_cast<long long>(chosen.size());
  std::set<cache::Key> keys;
  for (const Family* f : plan.untuned) keys.insert(cache_key(*f->op, f->shape, context));
  // A replayed config a run would not run: its key is tuned live (replay_fallback).
  const auto bad = unrunnable_replays(chosen, context);
  for (const auto& b : bad) keys.insert(cache_key(*b.family->op, b.family->shape, context));
  std::cout << "bench: check passed: " << count_of(selected, "benchmark", "benchmarks") << " selected, "
            << count_of(static_cast<long long>(keys.size()), "key", "keys") << " to tune (" << plan.executor->name()
            << "); nothing was run or tuned";
  if (const auto n = static_cast<long long>(plan.dead.folders.size()); n > 0) {
    std::cout << ", and " << count_of(n, "scratch folder", "scratch folders")
              << " of sweeps whose bench is gone (killed) under " << escape_controls(plan.dead.tmp.string())
              << (n == 1 ? " was" : " were") << " left for a run to merge";
  }
  // A run would not fail on them (it tunes their keys live, replay_fallback): said, not refused.
  if (!bad.empty()) {
    std::cout << "; " << count_of(static_cast<long long>(bad.size()), "replayed config", "replayed configs")
              << " a run would not run but tune live instead (first: " << bad.front().line << ")";
  }
  std::cout << "\n";
  return 0;
}

// Sweep: every selected key the cache cannot answer, before the serial timing loop.
void sweep_stage(const Invocation& inv, const SweepPlan& plan, const std::vector<Family>& families,
                 const BenchmarkFilter& filter, RunContext& context, ChoiceLog& choices) {
  const Settings& s = inv.settings();
  run_sweep_stage(*plan.executor, plan.untuned, families, filter, context, choices, s);
  // SQLite opens a read-only file for reading; say so once instead of failing key by key
  // (after the sweep's refusal, so a refused run prints one line).
  if (context.cache->read_only()) {
    std::cerr << "bench: config cache " << context.cache->path().string() << " is read-only: keys it does not "
              << "answer cannot be tuned (choose a writable one with --tunebench_cache or TUNEBENCH_CACHE)\n";
  }
}

// Registers the families Google Benchmark is to run. A listing registers every family and leaves
// the selection to Google Benchmark's filter (the names it prints are its own); a run registers
// the selected ones only, each with the iteration count its stored time sizes where the setting
// asks for it (its instance name then carries "/iterations:N", which the user's filter was never
// written against: time_stage hands Google Benchmark "^").
void register_families(const Invocation& inv, const std::vector<Family>& families, const BenchmarkFilter& filter,
                       const std::shared_ptr<const RunContext>& context, const std::shared_ptr<TimingLoopState>& loop) {
  const bool sized = !inv.listing() && inv.settings().iterations == IterationSizing::kSized;
  const double min_time = gbench_min_time();
  for (const auto& family : families) {
    if (!inv.listing() && !filter.selects(reported_name(family))) continue;
    std::optional<benchmark::IterationCount> n;
    if (sized && (!family.op->needs_gpu() || context->gpu_available)) {
      if (const auto ns = stored_run_ns(family, *context, *loop->choices)) {
        n = sized_iterations(min_time, static_cast<double>(*ns) * 1e-9);
        loop->stats.sized_iterations[family.name] = *n;
      }
    }
    register_family(family, context, loop, n);
  }
  benchmark::AddCustomContext("tunebench_iterations", to_string(inv.settings().iterations));
}

// Time and report: Google Benchmark's serial loop; the latency table joins the console format.
// tunebench makes both reporters (display, and the --benchmark_out file's when there is one),
// so that their numbers are written in the "C" form whatever locale an op has set.
std::size_t time_stage(const Invocation& inv, const std::vector<Family>& families, const BenchmarkFilter& filter,
                       const RunDir& dir, const std::string& out_file, BencherFile& dashboard) {
  use_c_numbers();  // an in-process sweep has prepared ops
  if (inv.listing()) return benchmark::RunSpecifiedBenchmarks(filter.run_spec());
  int options = benchmark::ConsoleReporter::OO_None;
  // "auto": a terminal, but not under an MPI launcher, whose ranks write to terminals of its
  // own even where the user's stdout is a file.
  if (inv.colour(isatty(STDOUT_FILENO) && !MpiSession::current())) options |= benchmark::ConsoleReporter::OO_Color;
  if (inv.tabular()) options |= benchmark::ConsoleReporter::OO_Tabular;
  const auto console_options = static_cast<benchmark::ConsoleReporter::OutputOptions>(options);
  // bencher.json is made from what the results file gets (every repetition, also under
  // --benchmark_display_aggregates_only), else from what the display gets.
  const RunObserver tap = [&dashboard](const auto& runs) { dashboard.add(runs); };
  const RunObserver display_tap = out_file.empty() ? tap : RunObserver{};
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  if (inv.console()) {
    auto table = std::make_unique<CNumbersReporter<LatencyTableReporter>>(families, dir.path(), console_options);
    table->observe(display_tap);
    display = std::move(table);
  } else {
    display = make_c_numbers_reporter(inv.format(), console_options, display_tap);
  }
  // Google Benchmark opens the --benchmark_out file and points this reporter at it.
  const auto file =
      out_file.empty() ? nullptr : make_c_numbers_reporter(inv.out_format(), benchmark::ConsoleReporter::OO_None, tap);
  // register_families registered the selection only, under names the filter does not know.
  return benchmark::RunSpecifiedBenchmarks(display.get(), file.get(), "^");
}

// The figures of keys tuned inside the timing loop (the in-process executor), under the names the
// up-front sweep's figures have: the context then has the sweep's cost on every path.
// With nothing timed there is no busy fraction (a 0 would read as a sweep that kept the device idle).
std::vector<ContextEntry> loop_tuning_context(const LoopTuning& t) {
  std::vector<ContextEntry> out{{"tunebench_sweep_seconds", c_number(t.seconds)},
                                {"tunebench_sweep_kernel_seconds", c_number(t.kernel_seconds)},
                                {"tunebench_sweep_worker_seconds", c_number(t.seconds)}};
  if (t.runs > 0) out.push_back({"tunebench_sweep_busy_fraction", c_number(t.busy())});
  out.push_back({"tunebench_sweep_timed_runs", std::to_string(t.runs)});
  return out;
}

std::string loop_tuning_summary(const LoopTuning& t, const std::string& strategy) {
  // No key was tuned (chosen before, or its benchmark failed first): a line of zeros would read
  // as a sweep that ran and measured nothing.
  if (t.runs == 0) return "bench: sweep (" + strategy + ", in the timing loop): nothing timed, no key was tuned here\n";
  char line[256];
  std::snprintf(line, sizeof line,
                "bench: sweep (%s, in the timing loop): %.1f s kernel time in %.1f s (%.0f%% busy), %lld timed runs\n",
                strategy.c_str(), t.kernel_seconds, t.seconds, 100 * t.busy(), t.runs);
  return line;
}

// Finish: the timing stage's figures, the run directory, --benchmark_out moved into place and
// completed (figures, replay markers, baseline speedups).
int finish_stage(const RunDir& dir, const RunContext& context, const TimingLoopState& loop, const Invocation& inv,
                 const std::string& out_file, const std::string& results, const BencherFile& dashboard,
                 const std::vector<Family>& families, bool tuned_in_loop, const std::vector<ContextEntry>& setup) {
  std::vector<ContextEntry> entries = setup;
  const auto timing = timing_context(loop.stats);
  entries.insert(entries.end(), timing.begin(), timing.end());
  std::string summary = timing_summary(loop.stats) + short_of_min_time_note(loop.stats, gbench_min_time());
  if (tuned_in_loop) {
    const auto tuning = loop_tuning_context(loop.tuning);
    entries.insert(entries.end(), tuning.begin(), tuning.end());
    summary += loop_tuning_summary(loop.tuning, inv.settings().sweep);
  }
  std::cerr << summary;
  if (dir.claimed()) {
    write_timing_stage(dir.path() / "timing_stage.json", loop.stats);
    dir.finish(context, *loop.record, *loop.choices, inv, results, dashboard);
  }
  if (!out_file.empty()) {
    std::error_code ec;
    const std::string partial = out_file + ".incomplete";
    if (std::filesystem::exists(partial, ec)) {
      std::filesystem::rename(partial, out_file, ec);
      if (ec) {
        std::cerr << "bench: cannot move " << partial << " to " << out_file << " (" << ec.message()
                  << "): the results are in " << partial << "\n";
        return 1;
      }
    }
  }
  if (!out_file.empty()) complete_results_file(out_file, entries, loop.choices->markers(), families);
  return 0;
}

// Seconds since this process was started (exec), from /proc; 0 where /proc cannot say. Resolution
// 1/CLK_TCK (10 ms).
double seconds_since_exec() {
  std::ifstream stat("/proc/self/stat"), uptime("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double up = 0;
  uptime >> up;
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || !uptime) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  unsigned long long start_ticks = 0;
  if (!(fields >> start_ticks)) return 0;
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? std::max(0.0, up - static_cast<double>(start_ticks) / static_cast<double>(ticks)) : 0;
}

// Where the process's time went before, in and after its two stages, for the line bench prints
// last: what an A/B's replay processes pay besides their measurement (docs/ab-method.md).
struct ProcessClock {
  using clock = std::chrono::steady_clock;
  clock::time_point main_entered = clock::now();
  double exec_to_main = seconds_since_exec();
  double cuda_s = 0, setup_s = 0, sweep_s = 0, timing_s = 0;
  clock::time_point sweep_started, timing_started;
  static double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }
  std::string line() const {
    char text[320];
    std::snprintf(text, sizeof text,
                  "bench: process: %.2f s to main, %.2f s setting up (of which %.2f s the devices, CUDA and the "
                  "cache), %.1f s sweeping, "
                  "%.1f s timing, %.2f s finishing\n",
                  exec_to_main, setup_s, cuda_s, sweep_s, timing_s,
                  std::max(0.0, since(main_entered) - setup_s - sweep_s - timing_s));
    return text;
  }
};

int run(int argc, char** argv, const OpList& ops, const Defaults& d) {
  ProcessClock process;
  use_c_numbers();                       // flags are read the "C" way, whatever locale the process was given
  Invocation inv(argc, argv, d.shapes);  // resolve settings
  // Before any CUDA call: it picks the GPU. A check is one process, whatever launched it.
  // A check starts no MPI session, but refuses the launcher's variables a run would refuse.
  if (inv.checking()) detect_launch(inv.launch_settings());
  const MpiSession* mpi = inv.checking() ? nullptr : MpiSession::start(inv.launch_settings());
  const bool leader = !mpi || mpi->rank() == 0;  // the other ranks only sweep, and write nothing
  if (!leader && inv.listing()) return 0;
  const Settings& s = inv.settings();
  if ((inv.makes_run_dir() && leader) || inv.checking()) inv.check_runs_folder();
  const RunDir dir(inv.makes_run_dir() && leader, inv);
  const std::string out_file = inv.route_output(dir.path());
  inv.check_paths(out_file);
  set_kernel_cache_dir(kernel_cache_dir(s.kernel_cache));  // before any op compiles
  // Google Benchmark's --help lists only its own flags, and exits inside Initialize: tunebench's
  // come first (README.md, "Flags and environment", holds the same table).
  if (inv.help()) {
    std::cout << "tunebench flags and environment variables (the flag wins over the environment):\n"
              << "| purpose | flag | environment | meaning | default |\n";
    for (const auto& row : settings_markdown_rows()) std::cout << row << "\n";
    std::cout << "\nGoogle Benchmark's flags:\n";
  }
  benchmark::Initialize(inv.argc(), inv.argv());
  if (benchmark::ReportUnrecognizedArguments(*inv.argc(), inv.argv())) return 2;

  const auto families = plan_families(ops, s);  // plan
  const auto cuda_started = ProcessClock::clock::now();
  const GpuProbe gpu = probe_gpus();
  std::string notice;
  const BenchmarkFilter filter = plan_selection(inv, families, ops, gpu, d, notice);
  if (!selects_any(families, filter)) return leader ? no_match(filter) : 1;  // before anything is written
  const auto context = make_context(s, gpu, ops,
                                    inv.checking()             ? ContextFor::kCheck
                                    : inv.listing() || !leader ? ContextFor::kListing  // a rank's child has the cache
                                                               : ContextFor::kRun);
  context->times_gpu_ops = gpu.available() && selected_gpu_families(families, filter) > 0;
  process.cuda_s = ProcessClock::since(cuda_started);
  if (!leader) return run_mpi_worker(*MpiSession::current(), families, *context, s, self_launch(inv));
  if (!inv.listing() && !inv.checking()) {
    benchmark::AddCustomContext("tunebench_cache", absolute_text(context->cache->path()));
  }
  if (s.shard >= 0 && !inv.checking()) return run_shard(families, *context, s);
  // What the sweep and the timing loop write; `context` holds only facts, const once swept.
  const auto loop = std::make_shared<TimingLoopState>();
  if (!inv.listing()) {
    loop->record = std::make_shared<RunRecord>();
    context->run_dir = dir.path();
    if (!s.replay_from.empty()) load_replay(s.replay_from, ops, *context);
  }
  const SweepPlan sweep =
      inv.listing() ? SweepPlan{} : plan_sweep(inv, families, filter, *context, *loop->choices, gpu);
  if (inv.checking()) return check_passed(families, filter, *context, sweep);
  std::cerr << notice;  // after every check of the input: a refused run prints one line
  benchmark::AddCustomContext("tunebench_autotune_space", s.space == SpaceKind::kExpanded ? "expanded" : "default");
  add_run_context(*context, s, gpu, ops);
  const std::string results = out_file.empty() ? "" : std::filesystem::absolute(out_file).string();
  if (dir.claimed()) dir.write_manifest(*context, *loop->record, *loop->choices, inv, results, false);
  process.setup_s = ProcessClock::since(process.main_entered);
  process.sweep_started = ProcessClock::clock::now();
  if (sweep.executor) sweep_stage(inv, sweep, families, filter, *context, *loop->choices);
  process.sweep_s = ProcessClock::since(process.sweep_started);

  // Settle configs and time: each benchmark's config is chosen (replayed, cached, or tuned now)
  // right before its own timing loop, by the registered body.
  if (dir.claimed()) benchmark::AddCustomContext("tunebench_run_dir", absolute_text(dir.path()));
  if (!s.replay_from.empty()) benchmark::AddCustomContext("tunebench_replay_from", absolute_text(s.replay_from));
  const std::shared_ptr<const RunContext> frozen = context;
  register_families(inv, families, filter, frozen, loop);
  BencherFile dashboard;
  const auto timing_started = std::chrono::steady_clock::now();
  std::size_t matched = 0;
  {
    std::optional<InterruptNote> note;
    if (!inv.listing()) note.emplace(interrupted_line(results, dir.claimed() ? absolute_text(dir.path()) : ""));
    matched = time_stage(inv, families, filter, dir, out_file, dashboard);
  }
  loop->stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - timing_started).count();
  process.timing_s = loop->stats.seconds;
  loop->last.release();  // the last benchmark's device memory, while CUDA is still up
  benchmark::Shutdown();
  if (inv.listing()) return matched == 0 ? no_match(filter) : 0;
  const bool tuned_in_loop = sweep.executor && !sweep.executor->sweeps_up_front();
  const std::vector<ContextEntry> setup{{"tunebench_setup_seconds", c_number(process.exec_to_main + process.setup_s)}};
  if (const int rc =
          finish_stage(dir, *context, *loop, inv, out_file, results, dashboard, families, tuned_in_loop, setup);
      rc != 0) {
    return rc;
  }
  std::cerr << process.line();
  return matched == 0 ? no_match(filter) : 0;
}

}  // namespace

int run_benchmarks(int argc, char** argv, const OpList& ops, const std::filesystem::path& default_shapes,
                   const std::string& default_filter_gpu, const std::string& default_filter_cpu) {
  cache::WatchedStdout out;  // keeps why the first write to stdout failed, for the line below
  int status = 2;
  try {
    status = run(argc, argv, ops, {default_shapes, default_filter_gpu, default_filter_cpu});
  } catch (const std::exception& e) {
    // One line whatever it quotes, in one write: the ranks of an MPI job share a stderr.
    std::cerr << ("bench: " + escape_controls(e.what()) + "\n");
  }
  // What Google Benchmark, the latency table and a listing wrote to stdout: a full disk or a
  // closed descriptor loses it silently unless looked for.
  if (const std::string why = out.flush_failure(); !why.empty()) {
    std::cerr << ("bench: cannot write to stdout (" + why + "): the output is lost\n");
    if (status == 0) status = 2;
  }
  MpiSession::end(status);  // rank 0 failing ends every rank
  return status;
}

}  // namespace tunebench
