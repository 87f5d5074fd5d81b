#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "bf16_gemm.hpp"
#include "cpu_mxfp4_gemm.hpp"
#include "hbm_read.hpp"
#include "mxfp4_gpu.hpp"
#include "shape_dir.hpp"
#include "tunebench/shape.hpp"

namespace fs = std::filesystem;
using tunebench::ShapeError;

namespace {

class ShapeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tunebench_shape_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  // Loads `text` and checks it against mxfp4_gemm's shape rules, as bench does when it makes
  // families; returns the ShapeError message ("" if it loaded and passed).
  std::string error_of(const std::string& text) {
    try {
      const auto set = tunebench::load_shape_file(write("bad.yaml", text));
      tunebench::check_shape_rules(set, tunebench::bench::Mxfp4GemmOp(false).shape_rules());
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

const std::string kGood = R"(name: tiny
description: a test set
moe: {experts: 8, top_k: 2}
gemms:
  - {name: up, n: 64, k: 128}
  - {name: down, n: 128, k: 64}
shapes:
  - {m: 1, calls: 10}
  - {m: 16}
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

}  // namespace

TEST_F(ShapeFileTest, GoodFileGivesOneShapePerEntryAndGemm) {
  const auto set = tunebench::load_shape_file(write("good.yaml", kGood));
  EXPECT_EQ(set.name, "tiny");
  EXPECT_EQ(set.description, "a test set");
  ASSERT_EQ(set.shapes.size(), 4u);
  const auto& s0 = set.shapes[0];
  EXPECT_EQ(s0.set, "tiny");
  EXPECT_EQ(s0.gemm, "up");
  EXPECT_EQ(s0.m, 1);
  EXPECT_EQ(s0.n, 64);
  EXPECT_EQ(s0.k, 128);
  EXPECT_EQ(s0.experts, 8);
  EXPECT_EQ(s0.top_k, 2);
  ASSERT_TRUE(s0.calls.has_value());
  EXPECT_EQ(*s0.calls, 10);
  EXPECT_EQ(set.shapes[1].gemm, "down");
  EXPECT_EQ(set.shapes[1].calls, 10);
  EXPECT_EQ(set.shapes[3].m, 16);
  EXPECT_FALSE(set.shapes[3].calls.has_value());
}

TEST_F(ShapeFileTest, RejectsEachKindOfBadFile) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {replace(kGood, "name: tiny\n", ""), "top level (line 1): missing required key 'name'"},
      {replace(kGood, "moe: {experts: 8, top_k: 2}", "moe: {experts: 8}"),
       "moe (line 3): missing required key 'top_k'"},
      {replace(kGood, "{m: 16}", "{calls: 3}"), "shapes[1] (line 9): missing required key 'm'"},
      {replace(kGood, "{m: 16}", "{m: 16, cals: 3}"), "shapes[1].cals (line 9): unknown key"},
      {replace(kGood, "description:", "descripton:"), "descripton (line 2): unknown key"},
      {replace(kGood, "{m: 16}", "{m: sixteen}"),
       "shapes[1].m (line 9): expected a positive decimal integer, got 'sixteen'"},
      {replace(kGood, "{m: 16}", "{m: 4.5}"), "shapes[1].m (line 9): expected a positive decimal integer, got '4.5'"},
      {replace(kGood, "{m: 16}", "{m: [16]}"), "shapes[1].m (line 9): expected a positive integer, got a list"},
      {replace(kGood, "{m: 16}", "{m: 0}"), "shapes[1].m (line 9): must be > 0, got 0"},
      {replace(kGood, "n: 64,", "n: -64,"), "gemms[0].n (line 5): must be > 0, got -64"},
      {replace(kGood, "k: 128}", "k: 100}"), "gemms[0].k (line 5): K=100 is not a multiple of 32"},
      {replace(kGood, "top_k: 2", "top_k: 9"), "moe.top_k (line 3): top_k 9 exceeds experts 8"},
      {replace(kGood, "{m: 16}", "{m: 1}"), "shapes[1].m (line 9): duplicate shape M=1 N=64 K=128"},
      {replace(kGood, "name: down", "name: up"), "gemms[1].name (line 6): duplicate gemm name 'up'"},
      {replace(kGood, "name: tiny", "name: tiny set"), "name (line 1): expected letters, digits and '_'"},
      {replace(kGood, "shapes:\n  - {m: 1, calls: 10}\n  - {m: 16}\n", "shapes: []\n"),
       "shapes (line 7): expected a non-empty list, got an empty one"},
      {replace(kGood, "{m: 16}", "{m: 16, m: 32}"), "shapes[1].m (line 9): duplicate key"},
      {replace(kGood, "{m: 16}", "{m: \"16\"}"),
       "shapes[1].m (line 9): expected a positive decimal integer, got the string '16'"},
      {replace(kGood, "{m: 16}", "{m: 010}"), "shapes[1].m (line 9): expected a positive decimal integer, got '010'"},
      {replace(kGood, "{m: 16}", "{m: 0x10}"), "shapes[1].m (line 9): expected a positive decimal integer, got '0x10'"},
      {replace(kGood, "{m: 16}", "{m: 99999999999999999999}"),
       "shapes[1].m (line 9): must be <= 16777216, got 99999999999999999999"},
      {replace(kGood, "{m: 16}", "{m: -99999999999999999999}"),
       "shapes[1].m (line 9): must be > 0, got -99999999999999999999"},
      {replace(kGood, "{m: 16}", "{m: 16, calls: 9223372036854775807}"),
       "shapes[1].calls (line 9): must be <= 1099511627776, got 9223372036854775807"},
      {replace(kGood, "name: down, n: 128, k: 64", "name: down, n: 64, k: 128"),
       "gemms[1] (line 6): gemms 'up' and 'down' have the same N=64 K=128 (their benchmark names would collide)"},
      {replace(kGood, "name: tiny\n", "name:\n"), "name (line 1): expected a string, got null"},
      {replace(kGood, "moe: {experts: 8, top_k: 2}", "moe:"), "moe (line 3): expected a map, got null"},
      {replace(kGood, "n: 64,", "n: 2000000,"), "gemms[0].n (line 5): must be <= 1048576, got 2000000"},
      {replace(kGood, "gemms:\n  - {name: up, n: 64, k: 128}\n  - {name: down, n: 128, k: 64}\n", "gemms: []\n"),
       "gemms (line 4): expected a non-empty list, got an empty one"},
      {kGood + "---\n" + kGood, "holds 2 YAML documents, expected one shape set per file"},
      {"[1, 2]\n", "top level (line 1): expected a map, got a list"},
      {"name: [unclosed\n", "not valid YAML"},
      {"", "bad.yaml: empty (no shape set), expected a map with name, gemms and shapes"},
      {"# only a comment\n", "bad.yaml: empty (no shape set)"},
      {replace(kGood, "  - {m: 16}", "\t- {m: 16}"), "(line 9 is indented with a tab; YAML indents with spaces)"},
      {std::string("\xff\xfen\0a\0m\0e\0", 10), "bad.yaml: UTF-16 text, expected a UTF-8 (or ASCII) YAML shape file"},
  };
  for (const auto& c : cases) {
    const std::string err = error_of(c.text);
    EXPECT_NE(err.find("bad.yaml: "), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in '" << err << "' for:\n"
                                                     << c.text;
    EXPECT_EQ(err.find('\n'), std::string::npos) << "error is not one line: " << err;
  }
}

TEST_F(ShapeFileTest, FolderLoadsEveryYamlInNameOrderAndRejectsDuplicateSets) {
  write("b.YAML", replace(kGood, "name: tiny", "name: second"));  // any case of the extension
  write("a.yml", kGood);
  write("notes.txt", "not a shape file");
  const auto sets = tunebench::load_shape_path(dir_);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].name, "tiny");
  EXPECT_EQ(sets[1].name, "second");

  write("c.yaml", kGood);
  try {
    tunebench::load_shape_path(dir_);
    FAIL() << "duplicate set name accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("set 'tiny' is already declared by"), std::string::npos) << e.what();
  }
}

TEST_F(ShapeFileTest, MissingPathAndEmptyFolderAreErrors) {
  EXPECT_THROW(tunebench::load_shape_path(dir_ / "nope.yaml"), ShapeError);
  fs::create_directories(dir_ / "empty");
  EXPECT_THROW(tunebench::load_shape_path(dir_ / "empty"), ShapeError);
  EXPECT_THROW(tunebench::load_shape_file(dir_ / "nope.yaml"), ShapeError);
  EXPECT_THROW(tunebench::load_shape_file(dir_), ShapeError);  // a folder is not a file
  fs::create_directories(dir_ / "linked");
  write("linked/good.yaml", kGood);
  fs::create_symlink(dir_ / "gone.yaml", dir_ / "linked" / "x.yaml");
  try {
    tunebench::load_shape_path(dir_ / "linked");
    FAIL() << "a broken link was skipped silently";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("x.yaml: a symbolic link to a missing target, expected a YAML shape file"),
              std::string::npos)
        << e.what();
  }
}

// A name or a path with a newline or another control character stays one line: escaped as \n,
// \t, \x1b, so the terminal neither breaks the line nor obeys an escape sequence.
TEST_F(ShapeFileTest, ControlCharactersInNamesAndPathsAreEscapedInTheOneLineError) {
  const std::string name_error =
      error_of("name: \"evil\\nset\\x1b[31m\"\ngemms: [{name: a, n: 64, k: 128}]\nshapes: [{m: 1}]\n");
  EXPECT_EQ(name_error.find('\n'), std::string::npos) << name_error;
  EXPECT_EQ(name_error.find('\x1b'), std::string::npos) << name_error;
  EXPECT_NE(name_error.find("got 'evil\\nset\\x1b[31m'"), std::string::npos) << name_error;
  const std::string gemm_error = error_of("name: ok\ngemms: [{name: \"a\\tb\", n: 64, k: 128}]\nshapes: [{m: 1}]\n");
  EXPECT_NE(gemm_error.find("a\\tb"), std::string::npos) << gemm_error;
  EXPECT_EQ(gemm_error.find('\t'), std::string::npos) << gemm_error;
  try {
    tunebench::load_shape_path(dir_ / "two\nlines.yaml");
    FAIL() << "a missing path loaded";
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("two\\nlines.yaml: no such shape file or folder"), std::string::npos) << what;
  }
  fs::create_directories(dir_ / "sets\x01");
  write("sets\x01/bad.yaml", "name: x\n");
  try {
    tunebench::load_shape_path(dir_ / "sets\x01");
    FAIL() << "a file without gemms loaded";
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\x01'), std::string::npos) << what;
    EXPECT_NE(what.find("sets\\x01/bad.yaml: "), std::string::npos) << what;
  }
}

TEST(ShippedShapeSets, AreTheFourDeepSeekV4FlashSets) {
  const auto sets = tunebench::load_shape_path(tunebench::testing::shipped_shape_dir());
  ASSERT_EQ(sets.size(), 4u);
  const std::vector<std::int64_t> decode{1, 2, 4, 8, 16, 32, 64, 128, 256};
  const std::vector<std::int64_t> prefill{512, 1024, 2048, 4096, 8192, 16384};
  struct Expect {
    const char* name;
    std::int64_t w13_n, w13_k, w2_n, w2_k;
    const std::vector<std::int64_t>* ms;
  };
  const Expect expect[] = {{"dsv4f_decode_ep", 4096, 4096, 4096, 2048, &decode},
                           {"dsv4f_decode_tp4", 1024, 4096, 4096, 512, &decode},
                           {"dsv4f_prefill_ep", 4096, 4096, 4096, 2048, &prefill},
                           {"dsv4f_prefill_tp4", 1024, 4096, 4096, 512, &prefill}};
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& set = sets[i];
    const auto& e = expect[i];
    EXPECT_EQ(set.name, e.name);
    ASSERT_EQ(set.shapes.size(), 2 * e.ms->size()) << set.name;
    for (std::size_t j = 0; j < e.ms->size(); ++j) {
      const auto& w13 = set.shapes[2 * j];
      const auto& w2 = set.shapes[2 * j + 1];
      EXPECT_EQ(w13.m, (*e.ms)[j]);
      EXPECT_EQ(w13.gemm, "w13");
      EXPECT_EQ(w13.n, e.w13_n);
      EXPECT_EQ(w13.k, e.w13_k);
      EXPECT_EQ(w2.gemm, "w2");
      EXPECT_EQ(w2.n, e.w2_n);
      EXPECT_EQ(w2.k, e.w2_k);
      EXPECT_EQ(w13.experts, 256);
      EXPECT_EQ(w13.top_k, 6);
    }
  }
  EXPECT_EQ(sets[0].shapes[0].calls, 172);
  EXPECT_EQ(sets[2].shapes.back().calls, 946);
}

TEST_F(ShapeFileTest, MoeIsOptionalAndItsAbsenceGivesZeroGeometry) {
  const auto set = tunebench::load_shape_file(write("plain.yaml", replace(kGood, "moe: {experts: 8, top_k: 2}\n", "")));
  ASSERT_EQ(set.shapes.size(), 4u);
  for (const auto& s : set.shapes) {
    EXPECT_EQ(s.experts, 0);
    EXPECT_EQ(s.top_k, 0);
  }
  EXPECT_FALSE(tunebench::has_moe(set));
  EXPECT_TRUE(tunebench::has_moe(tunebench::load_shape_file(write("good.yaml", kGood))));
  // A non-routed op takes the set; one that needs the geometry does not, and is not an error.
  EXPECT_TRUE(tunebench::check_shape_rules(set, tunebench::bench::Mxfp4GemmOp(false).shape_rules()));
  EXPECT_TRUE(tunebench::check_shape_rules(set, tunebench::bench::CpuMxfp4GemmOp().shape_rules()));
  EXPECT_FALSE(tunebench::check_shape_rules(set, tunebench::bench::Mxfp4MoeOp(false).shape_rules()));
}

TEST_F(ShapeFileTest, GemmEntriesKeepTheirKLineForLaterErrors) {
  const auto set = tunebench::load_shape_file(write("good.yaml", kGood));
  ASSERT_EQ(set.gemms.size(), 2u);
  EXPECT_EQ(set.gemms[0].name, "up");
  EXPECT_EQ(set.gemms[0].n, 64);
  EXPECT_EQ(set.gemms[0].k, 128);
  EXPECT_EQ(set.gemms[0].k_line, 5);
  EXPECT_EQ(set.gemms[1].name, "down");
  EXPECT_EQ(set.gemms[1].k_line, 6);
}

TEST_F(ShapeFileTest, EveryMxfp4OpsKRuleGivesTodaysError) {
  const auto file = write("bad.yaml", replace(kGood, "name: down, n: 128, k: 64", "name: down, n: 128, k: 100"));
  const auto set = tunebench::load_shape_file(file);  // the loader itself has no K rule
  const std::string expect =
      file.string() + ": gemms[1].k (line 6): K=100 is not a multiple of 32 (the MXFP4 block size)";
  const auto gemm = std::make_shared<const tunebench::bench::Mxfp4GemmOp>(false);
  const tunebench::OpList ops{
      gemm, std::make_shared<tunebench::bench::Mxfp4MoeOp>(false), std::make_shared<tunebench::bench::CpuMxfp4GemmOp>(),
      std::make_shared<tunebench::bench::Bf16GemmOp>(), std::make_shared<tunebench::bench::HbmReadOp>(gemm)};
  for (const auto& op : ops) {
    try {
      tunebench::check_shape_rules(set, op->shape_rules());
      ADD_FAILURE() << op->name() << " accepted K=100";
    } catch (const ShapeError& e) {
      EXPECT_EQ(std::string(e.what()), expect) << op->name();
    }
  }
}

TEST_F(ShapeFileTest, AnOpWithoutAKRuleAcceptsAnyK) {
  const auto set = tunebench::load_shape_file(write("k100.yaml", replace(kGood, "k: 128}", "k: 100}")));
  EXPECT_EQ(set.shapes[0].k, 100);
  EXPECT_TRUE(tunebench::check_shape_rules(set, tunebench::ShapeRules{}));
  tunebench::ShapeRules moe;
  moe.needs_moe = true;
  EXPECT_TRUE(tunebench::check_shape_rules(set, moe));
}

TEST(ShapeRules, ErrorsOfASetBuiltInCodeAndOfABadRule) {
  tunebench::ShapeSet set{"coded", "", {}, {tunebench::Shape{"coded", "w13", 1, 64, 96, 0, 0, std::nullopt}}};
  tunebench::ShapeRules rules;
  rules.k_multiple = 64;  // no reason given: no parenthesis
  try {
    tunebench::check_shape_rules(set, rules);
    FAIL() << "K=96 accepted as a multiple of 64";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "shape set 'coded': gemm 'w13': K=96 is not a multiple of 64");
  }
  rules.k_multiple = 32;
  EXPECT_TRUE(tunebench::check_shape_rules(set, rules));
  rules.k_multiple = 0;
  EXPECT_THROW(tunebench::check_shape_rules(set, rules), std::invalid_argument);
  // A set without shapes has no geometry to give.
  rules.k_multiple = 1;
  rules.needs_moe = true;
  EXPECT_FALSE(tunebench::check_shape_rules(tunebench::ShapeSet{"empty", "", {}, {}}, rules));
}

// The GPU and unit tests find the shipped sets where a moved build has them: TUNEBENCH_SHAPES
// first, then runs/shape above the test binary, then the path compiled in.
TEST(ShippedShapeSets, TheTestsLookForThemInTheEnvironmentThenBesideTheBinary) {
  const fs::path root = fs::temp_directory_path() / ("tunebench_shape_dir_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "moved" / "runs" / "shape");
  fs::create_directories(root / "moved" / "build" / "tests");
  const fs::path exe = root / "moved" / "build" / "tests" / "gpu_tests";
  EXPECT_EQ(tunebench::testing::shape_dir_for("/elsewhere/shapes", exe, "/src/runs/shape"), "/elsewhere/shapes");
  EXPECT_EQ(tunebench::testing::shape_dir_for("", exe, "/src/runs/shape"), root / "moved" / "runs" / "shape");
  EXPECT_EQ(tunebench::testing::shape_dir_for(nullptr, exe, "/src/runs/shape"), root / "moved" / "runs" / "shape");
  EXPECT_EQ(tunebench::testing::shape_dir_for(nullptr, root / "nowhere" / "gpu_tests", "/src/runs/shape"),
            "/src/runs/shape");
  fs::remove_all(root);
  // This process: the variable when set, else the shipped sets found from this binary.
  const char* was = std::getenv("TUNEBENCH_SHAPES");
  const std::string saved = was ? was : "";
  ::setenv("TUNEBENCH_SHAPES", "/elsewhere/shapes", 1);
  EXPECT_EQ(tunebench::testing::shipped_shape_dir(), "/elsewhere/shapes");
  ::unsetenv("TUNEBENCH_SHAPES");
  EXPECT_EQ(tunebench::load_shape_path(tunebench::testing::shipped_shape_dir()).size(), 4u);
  if (was) ::setenv("TUNEBENCH_SHAPES", saved.c_str(), 1);
}
