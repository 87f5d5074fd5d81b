// bench's orchestration, as its stages: resolve settings, plan, sweep, settle configs, time,
// report, finish the run directory (docs/design.md).

#include "tunebench/main.hpp"
#include "tunebench/nvrtc.hpp"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <exception>
#include <iostream>
#include <memory>

#include "common/c_numbers.hpp"
#include "common/one_line.hpp"
#include "context/context_setup.hpp"
#include "plan/selection.hpp"
#include "report/baseline_speedup.hpp"
#include "report/bencher_file.hpp"
#include "report/c_number_reporter.hpp"
#include "report/json_context.hpp"
#include "report/latency_table.hpp"
#include "report/run_dir.hpp"
#include "run/benchmark_body.hpp"
#include "settings/invocation.hpp"
#include "sweep/dead_scratch.hpp"
#include "sweep/mpi/mpi_executor.hpp"
#include "sweep/mpi/mpi_session.hpp"
#include "sweep/sweep_stage.hpp"

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
    notice +=
        "bench: no CUDA device (" + gpu.reason + "): " + std::to_string(n) +
        " selected GPU benchmarks cannot run and will be reported as errors (ERROR OCCURRED: 'no CUDA device: ...')\n";
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
};

SweepPlan plan_sweep(const Invocation& inv, const std::vector<Family>& families, const BenchmarkFilter& filter,
                     const RunContext& context, const ChoiceLog& choices, const GpuProbe& gpu) {
  // A sweep whose bench was killed left its scratch folder: what its workers finished counts
  // before the keys to tune are chosen.
  clean_dead_scratch(inv.settings(), context);
  SweepPlan plan{untuned_families(families, filter, context, choices), nullptr};
  plan.executor = choose_executor(inv.settings(), families, plan.untuned, context, gpu, self_launch(inv));
  if (plan.executor->sweeps_up_front()) check_results_can_be_stored(plan.untuned, context, plan.executor->name());
  return plan;
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
  return benchmark::RunSpecifiedBenchmarks(display.get(), file.get(), filter.run_spec());
}

// Finish: the run directory, --benchmark_out moved into place, the replay markers.
int finish_stage(const RunDir& dir, const RunContext& context, const TimingLoopState& loop, const Invocation& inv,
                 const std::string& out_file, const std::string& results, const BencherFile& dashboard,
                 const std::vector<Family>& families) {
  if (dir.claimed()) dir.finish(context, *loop.record, *loop.choices, inv, results, dashboard);
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
  const auto markers = loop.choices->markers();
  if (!markers.empty() && !out_file.empty()) add_markers(out_file, markers);
  if (!out_file.empty()) add_baseline_speedups(out_file, families);  // once both were measured
  return 0;
}

int run(int argc, char** argv, const OpList& ops, const Defaults& d) {
  use_c_numbers();                       // flags are read the "C" way, whatever locale the process was given
  Invocation inv(argc, argv, d.shapes);  // resolve settings
  const MpiSession* mpi = MpiSession::start(inv.launch_settings());  // before any CUDA call: it picks the GPU
  const bool leader = !mpi || mpi->rank() == 0;                      // the other ranks only sweep, and write nothing
  if (!leader && inv.listing()) return 0;
  const Settings& s = inv.settings();
  const RunDir dir(inv.makes_run_dir() && leader, s.runs);
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
  const GpuProbe gpu = probe_gpus();
  std::string notice;
  const BenchmarkFilter filter = plan_selection(inv, families, ops, gpu, d, notice);
  if (!selects_any(families, filter)) return leader ? no_match(filter) : 1;  // before anything is written
  const auto context = make_context(s, gpu, ops, inv.listing() || !leader);  // a rank's child has the cache
  if (!leader) return run_mpi_worker(*MpiSession::current(), families, *context, s, self_launch(inv));
  if (!inv.listing()) benchmark::AddCustomContext("tunebench_cache", absolute_text(context->cache->path()));
  if (s.shard >= 0) return run_shard(families, *context, s);
  // What the sweep and the timing loop write; `context` holds only facts, const once swept.
  const auto loop = std::make_shared<TimingLoopState>();
  if (!inv.listing()) {
    loop->record = std::make_shared<RunRecord>();
    context->run_dir = dir.path();
    if (!s.replay_from.empty()) load_replay(s.replay_from, ops, *context);
  }
  const SweepPlan sweep =
      inv.listing() ? SweepPlan{} : plan_sweep(inv, families, filter, *context, *loop->choices, gpu);
  std::cerr << notice;  // after every check of the input: a refused run prints one line
  benchmark::AddCustomContext("tunebench_autotune_space", s.space == SpaceKind::kExpanded ? "expanded" : "default");
  add_run_context(*context, s, gpu, ops);
  const std::string results = out_file.empty() ? "" : std::filesystem::absolute(out_file).string();
  if (dir.claimed()) dir.write_manifest(*context, *loop->record, *loop->choices, inv, results, false);
  if (sweep.executor) sweep_stage(inv, sweep, families, filter, *context, *loop->choices);

  // Settle configs and time: each benchmark's config is chosen (replayed, cached, or tuned now)
  // right before its own timing loop, by the registered body.
  if (dir.claimed()) benchmark::AddCustomContext("tunebench_run_dir", absolute_text(dir.path()));
  if (!s.replay_from.empty()) benchmark::AddCustomContext("tunebench_replay_from", absolute_text(s.replay_from));
  const std::shared_ptr<const RunContext> frozen = context;
  for (const auto& family : families) register_family(family, frozen, loop);
  BencherFile dashboard;
  const std::size_t matched = time_stage(inv, families, filter, dir, out_file, dashboard);
  loop->last.release();  // the last benchmark's device memory, while CUDA is still up
  benchmark::Shutdown();
  if (const int rc = finish_stage(dir, *context, *loop, inv, out_file, results, dashboard, families); rc != 0) {
    return rc;
  }
  return matched == 0 ? no_match(filter) : 0;
}

}  // namespace

int run_benchmarks(int argc, char** argv, const OpList& ops, const std::filesystem::path& default_shapes,
                   const std::string& default_filter_gpu, const std::string& default_filter_cpu) {
  int status = 2;
  try {
    status = run(argc, argv, ops, {default_shapes, default_filter_gpu, default_filter_cpu});
  } catch (const std::exception& e) {
    // One line whatever it quotes, in one write: the ranks of an MPI job share a stderr.
    std::cerr << ("bench: " + escape_controls(e.what()) + "\n");
  }
  MpiSession::end(status);  // rank 0 failing ends every rank
  return status;
}

}  // namespace tunebench
