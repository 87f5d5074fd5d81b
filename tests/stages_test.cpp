// The stages of a run that hold logic of their own: the command line, the plan's default
// filter, the choice of sweep executor.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cpu_mxfp4_gemm.hpp"
#include "plan/selection.hpp"
#include "run/context_setup.hpp"
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
  for (const char* t : {"100x", "1s", "0.5s", "", "x", "-1", "nan", "inf", "0,5"}) {
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
  EXPECT_EQ(tunebench::default_filter(other, true, "^mxfp4_", "^x"), ".");      // else everything
  EXPECT_EQ(tunebench::selected_gpu_families(other, tunebench::BenchmarkFilter("")), 0u);
}

TEST(SweepStage, TheExecutorFollowsTheSettings) {
  const tunebench::OpList ops{std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  const auto families = tunebench::make_families(ops, {tiny_set("mine")});
  const std::vector<const tunebench::Family*> untuned{&families[0]};
  const tunebench::GpuProbe none{0, "no device"};
  auto s = tunebench::testing::settings_from_env();
  s.warmup_gpus = 1;
  s.isolate_sweep = tunebench::IsolateSweep::kAuto;  // host keys only: in bench itself
  EXPECT_FALSE(tunebench::choose_executor(s, untuned, none, {"bench", {}})->sweeps_up_front());
  s.isolate_sweep = tunebench::IsolateSweep::kAlways;
  const auto isolated = tunebench::choose_executor(s, untuned, none, {"bench", {}});
  EXPECT_EQ(isolated->name(), "isolated sweep");
  s.warmup_gpus = 2;
  s.visible_devices = "6,7";
  EXPECT_EQ(tunebench::choose_executor(s, untuned, none, {"bench", {}})->name(), "parallel warmup");
  s.visible_devices = "6";
  EXPECT_THROW(tunebench::choose_executor(s, untuned, none, {"bench", {}}), std::invalid_argument);
}

// A strategy name that did not come through the settings row (a caller's own Settings) is
// refused in one line by the context's checked lookup, not dereferenced.
TEST(Context, AStrategyTheTableLacksIsOneLineError) {
  const tunebench::OpList ops{std::make_shared<tunebench::bench::CpuMxfp4GemmOp>()};
  auto s = tunebench::testing::settings_from_env();
  s.sweep = "fastest";
  try {
    tunebench::make_context(s, tunebench::GpuProbe{0, "no device"}, ops, true);
    FAIL() << "no error for an unknown strategy";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "TUNEBENCH_SWEEP='fastest': expected race or full");
  }
}
