#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "settings/settings.hpp"
#include "tunebench/op_switch.hpp"

namespace {

struct Argv {
  explicit Argv(std::vector<std::string> args) : store(std::move(args)) {
    for (auto& s : store) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    argc = static_cast<int>(store.size());
  }
  std::vector<std::string> store;
  std::vector<char*> ptrs;
  int argc;
};

std::string error_of(std::vector<std::string> args) {
  Argv a(std::move(args));
  try {
    tunebench::parse_settings(&a.argc, a.ptrs.data(), "default");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Options, TakesTunebenchFlagsAndLeavesTheRest) {
  ::unsetenv("TUNEBENCH_SHAPES");
  ::unsetenv("TUNEBENCH_SEED");
  Argv a({"bench", "--benchmark_filter=x", "--tunebench_shapes=/tmp/s.yaml", "--tunebench_seed=9", "y"});
  const auto opt = tunebench::parse_settings(&a.argc, a.ptrs.data(), "default");
  EXPECT_EQ(opt.shapes, "/tmp/s.yaml");
  EXPECT_EQ(opt.seed, 9u);
  ASSERT_EQ(a.argc, 3);
  EXPECT_STREQ(a.ptrs[1], "--benchmark_filter=x");
  EXPECT_STREQ(a.ptrs[2], "y");
  EXPECT_EQ(a.ptrs[3], nullptr);
}

TEST(Options, EnvironmentIsTheFallbackAndIsChecked) {
  ::setenv("TUNEBENCH_SHAPES", "/from/env", 1);
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").shapes, "/from/env");
  }
  ::setenv("TUNEBENCH_SHAPES", "", 1);  // empty is unset: the default
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").shapes, "default");
  }
  EXPECT_EQ(error_of({"bench", "--tunebench_shapes="}), "--tunebench_shapes='': expected a shape file or folder");
  ::unsetenv("TUNEBENCH_SHAPES");
  ::setenv("TUNEBENCH_SEED", "-3", 1);
  EXPECT_EQ(error_of({"bench"}), "TUNEBENCH_SEED='-3': expected a non-negative integer below 2^64");
  EXPECT_EQ(error_of({"bench", "--tunebench_seed=4"}), "");  // the flag wins; the variable is unused
  ::unsetenv("TUNEBENCH_SEED");
  Argv a({"bench"});
  EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").shapes, "default");
}

TEST(Options, BadFlagsAreOneLineErrors) {
  EXPECT_EQ(error_of({"bench", "--tunebench_seed=abc"}),
            "--tunebench_seed='abc': expected a non-negative integer below 2^64");
  EXPECT_EQ(error_of({"bench", "--tunebench_shapes"}), "--tunebench_shapes: expected --tunebench_shapes=VALUE");
  EXPECT_NE(error_of({"bench", "--tunebench_shape=x"}).find("--tunebench_shape: unknown flag"), std::string::npos);
}

TEST(Options, TimingModesAndColdL2) {
  ::unsetenv("TUNEBENCH_TIMING");
  ::unsetenv("TUNEBENCH_COLD_L2");
  {
    Argv a({"bench", "--tunebench_timing=cudagraph", "--tunebench_cold_l2=1"});
    const auto opt = tunebench::parse_settings(&a.argc, a.ptrs.data(), "default");
    EXPECT_EQ(std::string(to_string(opt.timing)), "cudagraph");
    EXPECT_TRUE(opt.cold_l2);
  }
  {
    Argv a({"bench"});
    const auto opt = tunebench::parse_settings(&a.argc, a.ptrs.data(), "default");
    EXPECT_EQ(std::string(to_string(opt.timing)), "kernel");
    EXPECT_FALSE(opt.cold_l2);
  }
  EXPECT_EQ(error_of({"bench", "--tunebench_timing=graph"}),
            "--tunebench_timing='graph': expected kernel, cudagraph or event");
  EXPECT_EQ(error_of({"bench", "--tunebench_cold_l2=yes"}), "--tunebench_cold_l2='yes': expected 0 or 1");
  ::setenv("TUNEBENCH_COLD_L2", "2", 1);
  EXPECT_EQ(error_of({"bench"}), "TUNEBENCH_COLD_L2='2': expected 0 or 1");
  EXPECT_EQ(error_of({"bench", "--tunebench_cold_l2=0"}), "");  // the flag wins
  ::setenv("TUNEBENCH_COLD_L2", "1", 1);
  {
    Argv a({"bench"});
    EXPECT_TRUE(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").cold_l2);
  }
  ::unsetenv("TUNEBENCH_COLD_L2");
}

namespace {

std::vector<std::string> readme_settings_rows() {
  std::ifstream in(TUNEBENCH_README);
  std::vector<std::string> rows;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("| purpose | flag | environment |", 0) == 0) {
      inside = true;
      std::getline(in, line);  // the |---| line
      continue;
    }
    if (inside && line.rfind("| ", 0) != 0) break;
    if (inside) rows.push_back(line);
  }
  return rows;
}

}  // namespace

TEST(Settings, ReadmeTableIsTheSettingsTable) {
  const auto readme = readme_settings_rows();
  const auto table = tunebench::settings_markdown_rows();
  ASSERT_FALSE(readme.empty()) << "no settings table in " << TUNEBENCH_README;
  EXPECT_EQ(readme, table);
  // The op's own switch is declared by the op, not by the runner.
  EXPECT_TRUE(std::any_of(table.begin(), table.end(), [](const std::string& r) {
    return r.find("`FLAGGEMS_MXFP4_FOLDSCALE`") != std::string::npos;
  }));
}

TEST(Settings, ACachePathWithAControlCharacterIsRefused) {
  // The path goes one a line into a sweep's scratch (its owner file): a newline would forge a line.
  EXPECT_EQ(error_of({"bench", "--tunebench_cache=/tmp/a\ncache=/tmp/b.sqlite"}),
            "--tunebench_cache='/tmp/a\\ncache=/tmp/b.sqlite': expected a file path without control characters");
}

TEST(Settings, UnknownFlagListsTheTablesFlags) {
  const std::string e = error_of({"bench", "--tunebench_nope=1"});
  EXPECT_EQ(e,
            "--tunebench_nope: unknown flag (tunebench flags: --tunebench_cache, --tunebench_timing, "
            "--tunebench_cold_l2, --tunebench_timing_loop, --tunebench_iterations, --tunebench_seed, "
            "--tunebench_shapes, --tunebench_runs, "
            "--tunebench_check)");
}

TEST(Settings, ManifestRecordsEveryTableVariableThatIsSet) {
  ::setenv("TUNEBENCH_RUNS", "/r", 1);
  ::setenv("TUNEBENCH_KERNEL_CACHE", "/k", 1);
  ::setenv("FLAGGEMS_MXFP4_FOLDSCALE", "1", 1);
  const auto env = tunebench::manifest_environment();
  EXPECT_EQ(env.at("TUNEBENCH_RUNS"), "/r");
  EXPECT_EQ(env.at("TUNEBENCH_KERNEL_CACHE"), "/k");
  EXPECT_EQ(env.at("FLAGGEMS_MXFP4_FOLDSCALE"), "1");
  EXPECT_EQ(env.count("TMPDIR"), 0u);  // where scratch goes is not a setting of the run
  ::unsetenv("TUNEBENCH_RUNS");
  ::unsetenv("TUNEBENCH_KERNEL_CACHE");
  ::unsetenv("FLAGGEMS_MXFP4_FOLDSCALE");
}

TEST(Settings, OnlyTableVariablesAreRead) {
  EXPECT_THROW(tunebench::setting_env("TUNEBENCH_NOT_A_SETTING"), std::logic_error);
  ::setenv("TUNEBENCH_KERNEL_CACHE", "/k", 1);
  EXPECT_STREQ(tunebench::setting_env("TUNEBENCH_KERNEL_CACHE"), "/k");
  ::unsetenv("TUNEBENCH_KERNEL_CACHE");
}

TEST(Settings, FaultsAndOpSwitchesAreParsedAtStart) {
  ::setenv("TUNEBENCH_FAULT_INJECT", "sticky-config=B=1", 1);
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").fault.sticky_config, "B=1");
  }
  ::setenv("TUNEBENCH_FAULT_INJECT", "abort-shard=x", 1);
  EXPECT_EQ(error_of({"bench"}), "TUNEBENCH_FAULT_INJECT abort-shard='x': expected a non-negative integer below 2^64");
  ::setenv("TUNEBENCH_FAULT_INJECT", "crash", 1);
  EXPECT_NE(error_of({"bench"}).find("TUNEBENCH_FAULT_INJECT='crash': expected abort-shard=I"), std::string::npos);
  ::unsetenv("TUNEBENCH_FAULT_INJECT");
  ::setenv("FLAGGEMS_MXFP4_FOLDSCALE", "2", 1);
  EXPECT_EQ(error_of({"bench"}), "FLAGGEMS_MXFP4_FOLDSCALE='2': expected 0 or 1");
  ::unsetenv("FLAGGEMS_MXFP4_FOLDSCALE");
  EXPECT_THROW(tunebench::OpSwitch("lower_case", "help"), std::invalid_argument);
  EXPECT_THROW(tunebench::OpSwitch("FLAGGEMS_MXFP4_FOLDSCALE", "again"), std::invalid_argument);
}

// The rows' fields are named in the table; this pins what each kind of row says of itself.
TEST(Settings, RowsKeepTheirNamedFields) {
  const auto table = tunebench::settings_table();
  const auto row = [&](const std::string& env, const std::string& flag) {
    const auto it = std::find_if(table.begin(), table.end(), [&](const tunebench::SettingSpec& r) {
      return (!env.empty() && r.env == env) || (!flag.empty() && r.flag == flag);
    });
    EXPECT_NE(it, table.end()) << env << flag;
    return it == table.end() ? tunebench::SettingSpec{} : *it;
  };
  const auto runs = row("TUNEBENCH_RUNS", "");
  EXPECT_EQ(runs.flag, "--tunebench_runs");
  EXPECT_EQ(runs.flag_value, "DIR");
  EXPECT_TRUE(runs.empty == tunebench::EmptyValue::kUnset && runs.documented && runs.manifest);
  const auto seed = row("TUNEBENCH_SEED", "");
  EXPECT_TRUE(seed.empty == tunebench::EmptyValue::kUnset);
  EXPECT_TRUE(seed.documented && seed.manifest && seed.parse);
  const auto devices = row("CUDA_VISIBLE_DEVICES", "");  // CUDA's: empty hides every GPU
  EXPECT_TRUE(devices.empty == tunebench::EmptyValue::kOwners && devices.documented && devices.manifest);
  const auto fault = row("TUNEBENCH_FAULT_INJECT", "");  // a test switch: recorded, not in the README
  EXPECT_FALSE(fault.documented);
  EXPECT_TRUE(fault.manifest);
  const auto tmp = row("TMPDIR", "");  // where scratch goes: neither
  EXPECT_TRUE(tmp.empty == tunebench::EmptyValue::kUnset);
  EXPECT_FALSE(tmp.documented || tmp.manifest);
  const auto home = row("HOME", "");
  EXPECT_FALSE(home.documented || home.manifest || home.parse);
  const auto shard = row("", "--tunebench_shard");
  EXPECT_TRUE(shard.env.empty());
  EXPECT_FALSE(shard.documented || shard.manifest);
  const auto fold = row("FLAGGEMS_MXFP4_FOLDSCALE", "");  // an op's switch
  EXPECT_EQ(fold.purpose, "op");
  EXPECT_TRUE(fold.documented && fold.manifest && fold.parse);
}

// TUNEBENCH_SWEEP takes its values, its help and its default from the strategy table.
TEST(Settings, TheSweepRowReadsTheStrategyTable) {
  const auto table = tunebench::settings_table();
  const auto sweep = std::find_if(table.begin(), table.end(),
                                  [](const tunebench::SettingSpec& r) { return r.env == "TUNEBENCH_SWEEP"; });
  ASSERT_NE(sweep, table.end());
  for (const auto& s : tunebench::sweep_strategy_table()) {
    EXPECT_NE(sweep->help.find(std::string("`") + s.name + "` " + s.help), std::string::npos) << s.name;
    ::setenv("TUNEBENCH_SWEEP", s.name, 1);
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").sweep, s.name);
  }
  ::unsetenv("TUNEBENCH_SWEEP");
  EXPECT_EQ(sweep->default_text, "`" + tunebench::default_sweep_strategy() + "`");
  EXPECT_EQ(tunebench::Settings{}.sweep, tunebench::sweep_strategy_table().front().name);
}

namespace {

// The settings a parse gave, field by field, for comparing two parses.
std::string describe(const tunebench::Settings& s) {
  std::string out =
      s.shapes.string() + "|" + std::to_string(s.seed) + "|" + s.cache.string() + "|" +
      std::to_string(static_cast<int>(s.space)) + "|" + to_string(s.timing) + "|" + std::to_string(s.cold_l2) + "|" +
      std::to_string(s.warmup_gpus) + "|" + std::to_string(static_cast<int>(s.isolate_sweep)) + "|" + s.sweep + "|" +
      std::to_string(s.hang_timeout_s) + "|" + s.runs.string() + "|" + s.runs_from + "|" + s.replay_from.string() +
      "|" + s.kernel_cache.string() + "|" + (s.visible_devices ? "[" + *s.visible_devices + "]" : "unset") + "|" +
      s.tmp_var + "|" + s.tmp_dir + "|" + std::to_string(s.fault.abort_shard) + s.fault.sticky_config +
      s.fault.hang_config + std::to_string(s.fault.slowdown) + "|" + std::to_string(s.check_only);
  for (const auto& [k, v] : s.launcher) out += "|" + k + "=" + v;
  return out;
}

std::string parsed() {
  Argv a({"bench"});
  return describe(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default"));
}

}  // namespace

// One rule for a variable set to "": unset, in every row of the table (the default applies, the
// manifest leaves it out, setting_env answers nullptr), except where the variable's owner gives ""
// a meaning of its own: CUDA's CUDA_VISIBLE_DEVICES (no GPU) and libgomp's OMP_NUM_THREADS
// (invalid, so refused). Every row is tried, so a row added later follows the rule too.
TEST(Settings, AnEmptyVariableIsUnsetInEveryRowUnlessItsOwnerSaysOtherwise) {
  const auto table = tunebench::settings_table();
  std::map<std::string, std::string> saved;
  for (const auto& r : table) {
    if (r.env.empty()) continue;
    if (const char* v = std::getenv(r.env.c_str())) saved[r.env] = v;
    ::unsetenv(r.env.c_str());
  }
  const std::string unset = parsed();
  std::set<std::string> owners;
  for (const auto& r : table) {
    if (r.env.empty()) continue;
    ::setenv(r.env.c_str(), "", 1);
    const auto manifest = tunebench::manifest_environment();
    if (r.empty == tunebench::EmptyValue::kUnset) {
      EXPECT_EQ(error_of({"bench"}), "") << r.env;
      EXPECT_EQ(parsed(), unset) << r.env << "= is not read as unset";
      EXPECT_EQ(manifest.count(r.env), 0u) << r.env << "= is recorded in the manifest";
      EXPECT_EQ(tunebench::setting_env(r.env), nullptr) << r.env;
    } else {
      owners.insert(r.env);
      EXPECT_EQ(manifest.at(r.env), "") << r.env;
      EXPECT_STREQ(tunebench::setting_env(r.env), "") << r.env;
    }
    ::unsetenv(r.env.c_str());
  }
  EXPECT_EQ(owners, (std::set<std::string>{"CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"}));
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);  // CUDA: no device
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").visible_devices, std::string());
  }
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::setenv("OMP_NUM_THREADS", "", 1);  // libgomp: invalid
  EXPECT_NE(error_of({"bench"}).find("OMP_NUM_THREADS='': expected the host ops' OpenMP threads"), std::string::npos);
  ::unsetenv("OMP_NUM_THREADS");
  // A flag given empty has no "unset" to mean: its parser refuses it where a value is needed.
  EXPECT_EQ(error_of({"bench", "--tunebench_cache="}), "--tunebench_cache='': expected a cache file");
  EXPECT_EQ(error_of({"bench", "--tunebench_runs="}), "--tunebench_runs='': expected a folder");
  for (const auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
}

// CUDA_VISIBLE_DEVICES as CUDA reads it: device indices, GPU and MIG UUIDs; anything else, which
// CUDA would silently stop at, is refused in one line naming the variable.
TEST(Settings, VisibleDevicesAreReadAsCudaReadsThem) {
  for (const char* good : {"0", "0,1", " 1 , 0", "-1", "6,-1,7", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
                           "GPU-8932f937", "MIG-c4f5d3b1-8c1e-5a9b-9b5e-0123456789ab",
                           "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", "0,GPU-8932f937"}) {
    ::setenv("CUDA_VISIBLE_DEVICES", good, 1);
    Argv a({"bench"});
    EXPECT_EQ(error_of({"bench"}), "") << good;
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").visible_devices, std::string(good));
  }
  for (const auto& [bad, entry] :
       std::vector<std::pair<std::string, std::string>>{{"abc", "entry 'abc'"},
                                                        {"0,abc", "entry 'abc'"},
                                                        {"0,,1", "an empty entry"},
                                                        {"0,", "an empty entry"},
                                                        {"1.5", "entry '1.5'"},
                                                        {"GPU-", "entry 'GPU-'"},
                                                        {"GPU-xyz", "entry 'GPU-xyz'"},
                                                        {"MIG-GPU-8932f937/1", "entry 'MIG-GPU-8932f937/1'"},
                                                        {"gpu0", "entry 'gpu0'"},
                                                        {"-", "entry '-'"}}) {
    ::setenv("CUDA_VISIBLE_DEVICES", bad.c_str(), 1);
    EXPECT_EQ(error_of({"bench"}), "CUDA_VISIBLE_DEVICES='" + bad + "': " + entry +
                                       " is not a device: expected comma-separated device indices (0,1), GPU UUIDs "
                                       "(GPU-8932f937-...) or MIG UUIDs (MIG-...), as CUDA reads them; empty or -1 "
                                       "for no GPU");
  }
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

// OMP_NUM_THREADS as OpenMP defines it, checked at start like every setting (the manifest records it).
TEST(Settings, OmpThreadsAreChecked) {
  for (const char* good : {"1", "16", "4,2", " 2 ", "2147483647"}) {
    ::setenv("OMP_NUM_THREADS", good, 1);
    EXPECT_EQ(error_of({"bench"}), "") << good;
    EXPECT_EQ(tunebench::manifest_environment().at("OMP_NUM_THREADS"), good);
  }
  for (const char* bad : {"abc", "0", "-1", "4,0", "4,", "+2", "2147483648", "1e3", " "}) {
    ::setenv("OMP_NUM_THREADS", bad, 1);
    EXPECT_EQ(error_of({"bench"}), "OMP_NUM_THREADS='" + std::string(bad) +
                                       "': expected the host ops' OpenMP threads, a positive integer (or a "
                                       "comma-separated list of them, one per nesting level)");
  }
  ::unsetenv("OMP_NUM_THREADS");
}

// Where the runs folder came from, so that its errors name the flag or the variable.
TEST(Settings, TheRunsFolderKnowsItsSource) {
  ::unsetenv("TUNEBENCH_RUNS");
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").runs_from, "");
  }
  ::setenv("TUNEBENCH_RUNS", "/r", 1);
  {
    Argv a({"bench"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").runs_from, "TUNEBENCH_RUNS");
  }
  {
    Argv a({"bench", "--tunebench_runs=/f"});
    EXPECT_EQ(tunebench::parse_settings(&a.argc, a.ptrs.data(), "default").runs_from, "--tunebench_runs");
  }
  ::unsetenv("TUNEBENCH_RUNS");
}
