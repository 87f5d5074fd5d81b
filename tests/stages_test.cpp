// The stages of a run that hold logic of their own: the command line, the plan's default
// filter, the choice of sweep executor.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "context/context_setup.hpp"
#include "cpu_mxfp4_gemm.hpp"
#include "plan/selection.hpp"
#include "settings/invocation.hpp"
#include "settings_from_env.hpp"
#include "sweep/sweep_stage.hpp"

namespace {

struct Argv {
  explicit Argv(std::vector<std::string> args) : store(std::move(args)) {
    for (auto& s : store) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(store.size()); }
  std::vector<std::string> store;
  std::vector<char*> ptrs;
};

std::vector<std::string> args_of(tunebench::Invocation& inv) {
  std::vector<std::string> out;
  for (int i = 0; i < *inv.argc(); ++i) out.push_back(inv.argv()[i]);
  EXPECT_EQ(inv.argv()[*inv.argc()], nullptr);
  return out;
}

tunebench::ShapeSet tiny_set(const std::string& name) {
  tunebench::ShapeSet set;
  set.name = name;
  set.shapes.push_back({name, "w13", 1, 256, 512, 0, 0, std::nullopt});
  return set;
}

}  // namespace

TEST(Invocation, OutputGoesToTheRunDirectoryAsIncompleteUntilTheEnd) {
  Argv a({"bench", "--tunebench_seed=3", "--benchmark_filter=x"});
  tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
  EXPECT_EQ(inv.settings().seed, 3u);
  EXPECT_TRUE(inv.makes_run_dir());
  EXPECT_TRUE(inv.filter_given());
  EXPECT_TRUE(inv.console());
  EXPECT_EQ(inv.route_output("/runs/r1"), "/runs/r1/results.json");
  EXPECT_EQ(args_of(inv), (std::vector<std::string>{"bench", "--benchmark_filter=x",
                                                    "--benchmark_out=/runs/r1/results.json.incomplete"}));
  EXPECT_EQ(inv.original_args(), (std::vector<std::string>{"--tunebench_seed=3", "--benchmark_filter=x"}));
}

TEST(Invocation, AGivenOutputFileKeepsItsNameAndACsvIsNotCalledJson) {
  {
    Argv a({"bench", "--benchmark_out=out/a.json", "--benchmark_format=json"});
    tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
    EXPECT_FALSE(inv.console());
    EXPECT_EQ(inv.route_output("/runs/r1"), "out/a.json");
    EXPECT_EQ(args_of(inv)[1], "--benchmark_out=out/a.json.incomplete");
  }
  {
    Argv a({"bench", "--benchmark_out_format=csv"});
    tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
    EXPECT_EQ(inv.route_output("/runs/r1"), "/runs/r1/results.csv");
  }
  {
    Argv a({"bench", "--benchmark_list_tests"});
    tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
    EXPECT_FALSE(inv.makes_run_dir());
  }
  {
    Argv a({"bench", "--help"});  // Google Benchmark prints its usage and exits in Initialize
    tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
    EXPECT_FALSE(inv.makes_run_dir());
    EXPECT_TRUE(inv.help());
  }
  {
    Argv a({"bench", "-h"});  // taken as --help
    tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
    EXPECT_TRUE(inv.help());
    EXPECT_FALSE(inv.makes_run_dir());
    EXPECT_EQ(args_of(inv)[1], "--help");
    EXPECT_EQ(inv.route_output(""), "");
    EXPECT_EQ(args_of(inv).size(), 2u);
  }
  for (const char* reps : {"-1", "0", "2147483647", "x", ""}) {
    Argv r({"bench", std::string("--benchmark_repetitions=") + reps});
    try {
      tunebench::Invocation inv(r.argc(), r.ptrs.data(), "shapes");
      ADD_FAILURE() << reps << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--benchmark_repetitions='") + reps +
                                           "': expected a whole number of repetitions, 1 to 100000");
    }
  }
  Argv nine({"bench", "--benchmark_repetitions=9"});
  EXPECT_NO_THROW(tunebench::Invocation(nine.argc(), nine.ptrs.data(), "shapes"));
  Argv bad({"bench", "--benchmark_format=xml"});
  try {
    tunebench::Invocation inv(bad.argc(), bad.ptrs.data(), "shapes");
    ADD_FAILURE() << "xml accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--benchmark_format='xml': expected console, json or csv");
  }
}

// Google Benchmark 1.8's "100x" (iterations) and "1s" are not 1.7.1's: it would answer them
// with two lines of its own after the run directory was made.
TEST(Invocation, AMinTimeThatIsNotPlainSecondsIsOneLineError) {
  for (const char* t : {"100x", "1s", "0.5s", "", "x", "nan", "inf", "0,5"}) {
    Argv a({"bench", std::string("--benchmark_min_time=") + t});
    try {
      tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
      ADD_FAILURE() << t << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--benchmark_min_time='") + t +
                                           "': expected plain seconds, e.g. 0.5 (Google Benchmark 1.7.1 takes no "
                                           "iteration count 'Nx' and no 's' suffix)");
    }
  }
  for (const char* t : {"-1", "-0.5", "-1e-3"}) {  // a number, but no time: the line says so
    Argv a({"bench", std::string("--benchmark_min_time=") + t});
    try {
      tunebench::Invocation inv(a.argc(), a.ptrs.data(), "shapes");
      ADD_FAILURE() << t << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--benchmark_min_time='") + t + "': expected seconds >= 0, e.g. 0.5");
    }
  }
  for (const char* t : {"0.5", "0.01", "2", "1e-2", "0"}) {
    Argv a({"bench", std::string("--benchmark_min_time=") + t});
    EXPECT_NO_THROW(tunebench::Invocation(a.argc(), a.ptrs.data(), "shapes")) << t;
  }
}

TEST(Plan, DefaultFilterFallsBackToEveryHostOpWhenTheDefaultSelectsNothing) {
  const tunebench::OpList ops{std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  const auto decode = tunebench::make_families(ops, {tiny_set("dsv4f_decode_x")});
  EXPECT_EQ(tunebench::default_filter(decode, false, "^mxfp4_", "^cpu_mxfp4_gemm/dsv4f_decode_"),
            "^cpu_mxfp4_gemm/dsv4f_decode_");
  const auto other = tunebench::make_families(ops, {tiny_set("mine")});
  EXPECT_EQ(tunebench::default_filter(other, false, "^mxfp4_", "^cpu_mxfp4_gemm/dsv4f_decode_"), "^cpu_");
  EXPECT_EQ(tunebench::default_filter(other, true, "^cpu_", "^x"), "^cpu_");  // the GPU default, when it selects
  EXPECT_EQ(tunebench::default_filter(other, true, "^mxfp4_", "^x"), ".");    // else everything
  EXPECT_EQ(tunebench::selected_gpu_families(other, tunebench::BenchmarkFilter("")), 0u);
}

TEST(SweepStage, TheExecutorFollowsTheSettings) {
  const tunebench::OpList ops{std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  const auto families = tunebench::make_families(ops, {tiny_set("mine")});
  const std::vector<const tunebench::Family*> untuned{&families[0]};
  const tunebench::GpuProbe none{0, "no device"};
  const tunebench::RunContext context;
  auto s = tunebench::testing::settings_from_env();
  s.warmup_gpus = 1;
  s.isolate_sweep = tunebench::IsolateSweep::kAuto;  // host keys only: in bench itself
  EXPECT_FALSE(tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}})->sweeps_up_front());
  s.isolate_sweep = tunebench::IsolateSweep::kAlways;
  const auto isolated = tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}});
  EXPECT_EQ(isolated->name(), "isolated sweep");
  s.warmup_gpus = 2;
  s.visible_devices = "6,7";
  EXPECT_EQ(tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}})->name(), "parallel warmup");
  s.visible_devices = "6";
  EXPECT_THROW(tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}}), std::invalid_argument);
}

// A strategy name that did not come through the settings row (a caller's own Settings) is
// refused in one line by the context's checked lookup, not dereferenced.
TEST(Context, AStrategyTheTableLacksIsOneLineError) {
  const tunebench::OpList ops{std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  auto s = tunebench::testing::settings_from_env();
  s.sweep = "fastest";
  try {
    tunebench::make_context(s, tunebench::GpuProbe{0, "no device"}, ops, tunebench::ContextFor::kListing);
    FAIL() << "no error for an unknown strategy";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "TUNEBENCH_SWEEP='fastest': expected " + tunebench::sweep_strategy_choices());
  }
}

namespace {

// An executor the runner has never heard of: the sweep stage prints its summary and writes its
// context entries as it gives them, with no name compared and no cast.
class ToyExecutor final : public tunebench::SweepExecutor {
 public:
  std::string name() const override { return "toy sweep"; }
  bool sweeps_up_front() const override { return true; }
  tunebench::SweepReport sweep(const std::vector<const tunebench::Family*>&, const tunebench::RunContext&,
                               tunebench::ChoiceLog&, bool) override {
    tunebench::SweepReport r;
    r.keys = 3;
    r.shards = 7;
    r.seconds = 2.5;
    r.kernel_s = 1;
    r.worker_s = 4;
    r.compile_s = 3;
    r.compile_exposed_s = 0.5;
    return r;
  }
  std::string summary(const tunebench::SweepReport& r) const override {
    return "bench: toy sweep: " + std::to_string(r.keys) + " keys on " + std::to_string(r.shards) + " toys\n";
  }
  std::vector<tunebench::ContextEntry> context_entries(const tunebench::SweepReport& r) const override {
    return {{"toy_sweep_keys", std::to_string(r.keys)}, {"toy_sweep_toys", std::to_string(r.shards)}};
  }
};

}  // namespace

TEST(SweepStage, AnExecutorDescribesItself) {
  ToyExecutor toy;
  tunebench::RunContext context;
  tunebench::ChoiceLog choices;
  auto s = tunebench::testing::settings_from_env();
  s.sweep = "full";
  s.warmup_gpus = 2;  // what the parallel warmup's figures used to be chosen by
  ::testing::internal::CaptureStderr();
  const auto report = tunebench::run_sweep_stage(toy, {}, {}, tunebench::BenchmarkFilter(""), context, choices, s);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(report.keys, 3);
  EXPECT_EQ(err.rfind("bench: toy sweep: 3 keys on 7 toys\nbench: sweep (full): 1.0 s kernel time in 4.0 s of worker "
                      "time (25% busy; 3.0 s compiling, 0.5 s of worker time waiting for it)",
                      0),
            0u)
      << err;
  EXPECT_EQ(err.find("parallel warmup"), std::string::npos) << err;
  const auto entries = tunebench::sweep_context(toy, report, s);
  const std::vector<tunebench::ContextEntry> expected{{"tunebench_sweep_strategy", "full"},
                                                      {"tunebench_sweep_seconds", "2.500000"},
                                                      {"tunebench_sweep_compile_seconds", "3.000000"},
                                                      {"tunebench_sweep_compile_exposed_seconds", "0.500000"},
                                                      {"tunebench_sweep_kernel_seconds", "1.000000"},
                                                      {"tunebench_sweep_worker_seconds", "4.000000"},
                                                      {"tunebench_sweep_busy_fraction", "0.250000"},
                                                      {"tunebench_sweep_timed_runs", "0"},
                                                      {"tunebench_sweep_configs_dropped", "0"},
                                                      {"tunebench_sweep_configs_pruned", "0"},
                                                      {"toy_sweep_keys", "3"},
                                                      {"toy_sweep_toys", "7"}};
  EXPECT_EQ(entries, expected);
}

// The in-process sweep has nothing to say but the strategy; the child-process executors say
// what the README lists, chosen by what they are rather than by the settings.
TEST(SweepStage, TheChildProcessExecutorsDescribeThemselves) {
  const tunebench::OpList ops{std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  const auto families = tunebench::make_families(ops, {tiny_set("mine")});
  const std::vector<const tunebench::Family*> untuned{&families[0]};
  const tunebench::GpuProbe none{0, "no device"};
  const tunebench::RunContext context;
  auto s = tunebench::testing::settings_from_env();
  s.warmup_gpus = 1;
  s.isolate_sweep = tunebench::IsolateSweep::kNever;
  tunebench::SweepReport w;
  w.keys = 4;
  w.shards = 2;
  w.tuned = 4;
  w.seconds = 3.25;
  w.per_shard = {{3, 1.5, 2.5, "6"}, {1, 0.5, 2, "7"}};
  const auto in_process = tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}});
  EXPECT_EQ(tunebench::sweep_context(*in_process, w, s),
            (std::vector<tunebench::ContextEntry>{{"tunebench_sweep_strategy", s.sweep}}));
  s.isolate_sweep = tunebench::IsolateSweep::kAlways;
  const auto isolated = tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}});
  EXPECT_EQ(isolated->summary(w),
            "bench: isolated sweep: 4 keys in a child process in 3.2 s, 4 tuned, 0 child processes failed\n");
  EXPECT_EQ(isolated->context_entries(w),
            (std::vector<tunebench::ContextEntry>{{"tunebench_isolated_sweep_keys", "4"},
                                                  {"tunebench_isolated_sweep_seconds", "3.250000"}}));
  s.warmup_gpus = 2;
  s.visible_devices = "6,7";
  const auto parallel = tunebench::choose_executor(s, families, untuned, context, none, {"bench", {}});
  EXPECT_EQ(parallel->summary(w),
            "bench: parallel warmup: 4 keys on 2 shards in 3.2 s, 4 tuned, 0 shards failed, 0 disagreements\n"
            "bench: parallel warmup shard 0: 3 keys, 1.5 s tuning in 2.5 s\n"
            "bench: parallel warmup shard 1: 1 key, 0.5 s tuning in 2.0 s\n");
  const auto entries = parallel->context_entries(w);
  ASSERT_EQ(entries.size(), 8u);
  EXPECT_EQ(entries.front(), (tunebench::ContextEntry{"parallel_warmup_gpus", "2"}));
  EXPECT_EQ(entries.back(), (tunebench::ContextEntry{"parallel_warmup_shard_devices", "0=6, 1=7"}));
}
