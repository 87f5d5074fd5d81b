#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "ops.hpp"
#include "plan/family.hpp"
#include "plan/filter.hpp"
#include "shape_dir.hpp"

using tunebench::BenchmarkFilter;

TEST(BenchmarkFilter, RegexNegationAndAll) {
  const std::string name = "mxfp4_moe/dsv4f_decode_ep/M:8/N:4096/K:4096/E:256/topk:6/manual_time";
  EXPECT_TRUE(BenchmarkFilter("mxfp4").selects(name));
  EXPECT_TRUE(BenchmarkFilter("").selects(name));
  EXPECT_TRUE(BenchmarkFilter("all").selects(name));
  EXPECT_FALSE(BenchmarkFilter("-mxfp4").selects(name));
  EXPECT_TRUE(BenchmarkFilter("-cpu_").selects(name));
  EXPECT_TRUE(BenchmarkFilter("^mxfp4_moe/.*/M:8/").selects(name));
  EXPECT_FALSE(BenchmarkFilter("^moe").selects(name));
  EXPECT_THROW(BenchmarkFilter("M:(8"), std::invalid_argument);
}

// Google Benchmark 1.7.1 lists quadratically under the spec "." (FindBenchmarks reserves one
// family at a time): bench never hands it that spelling of "everything".
TEST(BenchmarkFilter, RunSpecSelectsTheSameButNeverDot) {
  for (const char* all : {"", "all", "."}) EXPECT_EQ(BenchmarkFilter(all).run_spec(), "^") << all;
  EXPECT_EQ(BenchmarkFilter("mxfp4").run_spec(), "mxfp4");
  EXPECT_EQ(BenchmarkFilter("-.").run_spec(), "-.");
  EXPECT_EQ(BenchmarkFilter("^").run_spec(), "^");
}

namespace {

std::set<std::string> list_tests(const std::string& filter) {
  const std::string cmd = std::string("'") + TUNEBENCH_BENCH_EXE + "' --benchmark_list_tests --tunebench_shapes='" +
                          tunebench::testing::shipped_shape_dir().string() + "' --benchmark_filter='" + filter +
                          "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::set<std::string> names;
  char line[4096];
  while (pipe && fgets(line, sizeof line, pipe.get())) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    names.insert(s);
  }
  return names;
}

}  // namespace

// Our selection must be exactly Google Benchmark's, or the pre-run work (skip notices, and the
// sweep that later runs before the timing loop) would cover other benchmarks than it runs.
TEST(BenchmarkFilter, SelectsExactlyWhatBenchListsTests) {
  const auto families = tunebench::make_families(tunebench::bench::builtin_ops(),
                                                 tunebench::load_shape_path(tunebench::testing::shipped_shape_dir()));
  for (const std::string filter :
       {"mxfp4", "-mxfp4", "decode_ep/M:(1|16)/", "-prefill", "^cpu_mxfp4_gemm/dsv4f_decode_tp4/M:[0-9]/", "K:512",
        "all", "manual_time$", "M:1/"}) {
    std::set<std::string> ours;
    const BenchmarkFilter f(filter);
    for (const auto& family : families) {
      if (f.selects(tunebench::reported_name(family))) ours.insert(tunebench::reported_name(family));
    }
    const auto theirs = list_tests(filter);
    EXPECT_FALSE(theirs.empty() && !ours.empty()) << filter;
    EXPECT_EQ(ours, theirs) << "filter " << filter;
  }
}
