#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_source.hpp"
#include "mxfp4_gpu.hpp"
#include "mxfp4_gpu_internal.hpp"
#include "mxfp4_kernel_axes.hpp"
#include "tunebench/cuda.hpp"

using tunebench::Config;
using tunebench::ConfigAxis;
using tunebench::SpaceKind;
namespace b = tunebench::bench;

namespace {

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST(Mxfp4KernelVersion, ACommentOrBlankLineEditKeepsItAndACodeEditChangesIt) {
  const b::KernelFiles shipped = b::mxfp4_kernel_files();
  const std::string version = b::mxfp4_kernel_version(shipped);
  EXPECT_EQ(b::Mxfp4GemmOp(false).kernel_version(), version);
  EXPECT_EQ(version.rfind("mxfp4-", 0), 0u) << version;

  auto comments = shipped;
  auto& decode = comments["mxfp4_decode.cuh"];
  decode = replaced(decode, "#define DMT (BLOCK_M / 8)",
                    "// a new note\n#define DMT (BLOCK_M /* rows */ / 8)  // more\n\n   \n");
  comments["mxfp4_common.cuh"] =
      "/* a header\n   comment */\n" + comments["mxfp4_common.cuh"] + "\n// trailing note  \n";
  EXPECT_EQ(b::mxfp4_kernel_version(comments), version);

  auto code = shipped;
  code["mxfp4_decode.cuh"] =
      replaced(code["mxfp4_decode.cuh"], "#define DMT (BLOCK_M / 8)", "#define DMT (BLOCK_M / 4)");
  EXPECT_NE(b::mxfp4_kernel_version(code), version);
  // An included header is part of what is compiled, and so of the version.
  auto header = shipped;
  header["mxfp4_rows.cuh"] = replaced(header["mxfp4_rows.cuh"], "atomicAdd(Yacc + i, v);", "atomicAdd(Yacc + i, -v);");
  EXPECT_NE(b::mxfp4_kernel_version(header), version);
}

TEST(WithoutComments, DropsCommentsAndBlankLinesButKeepsLiteralsByteForByte) {
  EXPECT_EQ(b::without_comments("int a;  // note\n\n  \n  int b; /* x */ int  c;\t\n"), "int a;\nint b; int c;\n");
  // A block comment is a blank, so tokens it separated stay apart.
  EXPECT_EQ(b::without_comments("a/*x*/b\n"), "a b\n");
  EXPECT_EQ(b::without_comments("a /* one\ntwo */ b\n"), "a b\n");
  // A backslash-newline continues a line comment.
  EXPECT_EQ(b::without_comments("x; // a \\\n still comment\ny;\n"), "x;\ny;\n");
  const std::string literals =
      "const char* s = \"a // b /* c */  \\\" d\";\nchar q = '/'; char r = '\\'';\n"
      "const char* raw = R\"k(// kept\n/* kept */  )k\";\nlong n = 1'000'000;\n";
  EXPECT_EQ(b::without_comments(literals), literals);
  EXPECT_EQ(b::without_comments("asm(\"mov.u32 %0, %1;\\n\" : \"=r\"(x));  // asm\n"),
            "asm(\"mov.u32 %0, %1;\\n\" : \"=r\"(x));\n");
}

TEST(FlattenIncludes, InlinesEachEmbeddedHeaderOnceAndRefusesAnUnknownOne) {
  const b::KernelFiles files{{"main.cuh", "#include \"a.cuh\"\n#include \"b.cuh\"\nmain\n"},
                             {"a.cuh", "#pragma once\n#include \"b.cuh\"\na\n"},
                             {"b.cuh", "#pragma once\nb\n"}};
  EXPECT_EQ(b::flatten_includes(files, "main.cuh"), "b\na\nmain\n");
  const b::KernelFiles broken{{"main.cuh", "#include \"missing.cuh\"\n"}};
  try {
    b::flatten_includes(broken, "main.cuh");
    FAIL() << "no error for a missing include";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("main.cuh includes \"missing.cuh\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(b::flatten_includes(files, "other.cuh"), std::logic_error);
  // Every family's translation unit is whole: NVRTC gets no include to resolve.
  for (const auto& f : b::mxfp4_families()) {
    const std::string& source = b::mxfp4_kernel_source(f.id);
    EXPECT_EQ(source.find("#include \""), std::string::npos) << f.file;
    EXPECT_NE(source.find("extern \"C\" __global__"), std::string::npos) << f.file;
    EXPECT_NE(source.find(f.kernel + "("), std::string::npos) << f.file;
  }
}

// The kernel file of each family names, in its #error check, exactly the axes the host compiles
// in: a new axis on one side only fails here.
TEST(Mxfp4KernelAxes, EachKernelFileRequiresExactlyItsFamilysCompiledAxes) {
  for (const auto& f : b::mxfp4_families()) {
    const std::string& text = b::mxfp4_kernel_files().at(f.file);
    std::set<std::string> required;
    const auto line_end = text.find('\n', text.find("#if !defined("));
    const std::string check = text.find("#if !defined(") == std::string::npos ? "" : text.substr(0, line_end);
    for (auto at = check.find("defined("); at != std::string::npos; at = check.find("defined(", at + 1)) {
      required.insert(check.substr(at + 8, check.find(')', at) - at - 8));
    }
    std::set<std::string> compiled;
    for (const auto& a : f.axes) {
      if (a.define && a.name != f.marker) compiled.insert(a.name);
    }
    EXPECT_EQ(required, compiled) << f.file;
  }
}

TEST(Mxfp4KernelAxes, EverySpaceConfigIsAdmittedByItsFamilyAndCompilesWithEveryAxisDefined) {
  for (const bool moe : {false, true}) {
    std::unique_ptr<b::Mxfp4GpuOp> op;
    if (moe)
      op = std::make_unique<b::Mxfp4MoeOp>(false);
    else
      op = std::make_unique<b::Mxfp4GemmOp>(false);
    for (const auto kind : {SpaceKind::kDefault, SpaceKind::kExpanded}) {
      const auto space = op->config_space(kind);
      EXPECT_EQ(op->config_space(kind), space);  // the same list on every call
      for (const auto& c : space) {
        const auto& family = b::family_of(c);
        ASSERT_TRUE(family.admits(c)) << c.str();
        if (!family.gemm) continue;
        const auto build = b::mxfp4_jit_build(c, moe, false, "sm_90");
        EXPECT_EQ(build.request.source_name, family.file);
        for (const auto& a : family.axes) {
          const std::string define = "-D" + a.name + "=" + std::to_string(family.value(c, a.name));
          EXPECT_NE(std::find(build.request.options.begin(), build.request.options.end(), define),
                    build.request.options.end())
              << c.str() << " lacks " << define;
        }
      }
    }
  }
}

TEST(Mxfp4KernelAxes, ASpaceLeavesOptionalAxesAtTheirFallbackOutOfTheName) {
  const auto& decode = b::mxfp4_family(b::Mxfp4Family::kDecode);
  const auto configs = decode.space({{"BLOCK_M", {8}},
                                     {"BLOCK_N", {16, 32}},
                                     {"WARPS_K", {4}},
                                     {"UNROLL", {2}},
                                     {"SPLIT_K", {1}},
                                     {"STAGES", {0}},
                                     {"SCALE_VOTE", {1}},
                                     {"BLOCK_REDUCE", {0}}});
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_EQ(configs[0].str(), "DECODE=1,BLOCK_M=8,WARPS_K=4,UNROLL=2,SPLIT_K=1,STAGES=0,SCALE_VOTE=1");
  EXPECT_EQ(configs[1].str(), "DECODE=1,BLOCK_M=8,BLOCK_N=32,WARPS_K=4,UNROLL=2,SPLIT_K=1,STAGES=0,SCALE_VOTE=1");
  EXPECT_EQ(b::decode_block_n(configs[0]), 16);
  EXPECT_THROW(decode.space({{"BLOCK_M", {8}}, {"BLOCK_K", {64}}}), std::logic_error);  // not a decode axis
  EXPECT_THROW(decode.space({{"BLOCK_M", {12}}, {"WARPS_K", {4}}}), std::logic_error);  // not admitted
  EXPECT_THROW(decode.space({{"BLOCK_M", {8}}}), std::logic_error);                     // WARPS_K missing
}

TEST(Mxfp4KernelAxes, AParameterOutsideTheFamilyIsRefusedNotCompiled) {
  const Config decode{{"DECODE", 1},  {"BLOCK_M", 8}, {"WARPS_K", 4},    {"UNROLL", 2},
                      {"SPLIT_K", 1}, {"STAGES", 0},  {"SCALE_VOTE", 1}, {"BLOCK_K", 256}};
  EXPECT_THROW(b::mxfp4_jit_build(decode, false, false, "sm_90"), tunebench::ConfigError);
  const b::Mxfp4GemmOp op(false);
  const tunebench::Shape shape{"s", "w13", 1, 4096, 4096, 0, 0, {}};
  EXPECT_FALSE(op.can_implement(decode, shape, tunebench::sm90_reference_device()));
  // A tile config lacking an axis is false, never an exception.
  EXPECT_FALSE(op.can_implement(Config{{"BLOCK_M", 8}, {"BLOCK_N", 64}}, shape, tunebench::sm90_reference_device()));
}
