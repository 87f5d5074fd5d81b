// Numbers in the "C" form whatever locale the process is in (common/c_numbers.hpp).
#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <locale>
#include <sstream>
#include <string>

#include "common/c_numbers.hpp"
#include "common/one_line.hpp"

namespace {

// A decimal comma and grouped thousands, which needs no installed locale.
struct CommaNumpunct : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

std::string streamed() {
  std::ostringstream out;
  out << 32768 << ' ' << 1.5;
  return out.str();
}

// Restores the classic C and C++ locales after each test.
class CNumbersTest : public ::testing::Test {
 protected:
  void TearDown() override {
    std::locale::global(std::locale::classic());
    std::setlocale(LC_ALL, "C");
  }
  // A comma-decimal C locale, if the machine has one.
  static bool set_comma_c_locale() {
    for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "de_DE"}) {
      if (std::setlocale(LC_ALL, name)) return true;
    }
    return false;
  }
};

}  // namespace

TEST_F(CNumbersTest, UseCNumbersUndoesAGlobalCommaNumpunct) {
  std::locale::global(std::locale(std::locale::classic(), new CommaNumpunct));
  ASSERT_EQ(streamed(), "32.768 1,5");  // what Google Benchmark's JSON would get
  tunebench::use_c_numbers();
  EXPECT_EQ(streamed(), "32768 1.5");
  tunebench::use_c_numbers();  // idempotent
  EXPECT_EQ(streamed(), "32768 1.5");
}

TEST_F(CNumbersTest, ImbuedStreamsIgnoreTheirLocale) {
  std::ostringstream out;
  out.imbue(std::locale(std::locale::classic(), new CommaNumpunct));
  tunebench::imbue_c_numbers(out);
  out << 32768 << ' ' << 1.5;
  EXPECT_EQ(out.str(), "32768 1.5");
}

TEST_F(CNumbersTest, FormatCAndUseCNumbersIgnoreACommaCLocale) {
  EXPECT_EQ(tunebench::format_c("%.3g", 1.5), "1.5");
  EXPECT_EQ(tunebench::c_number(2.06098), "2.060980");
  EXPECT_EQ(tunebench::format_c("%.1f", 1e300).size(), 303u);  // longer than any fixed buffer
  if (!set_comma_c_locale())
    GTEST_SKIP() << "no comma-decimal locale installed (de_DE.UTF-8): C locale part not checked";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f", 1.5);
  ASSERT_STREQ(buf, "1,5");
  EXPECT_EQ(tunebench::format_c("%.3g", 1.5), "1.5");
  EXPECT_EQ(tunebench::c_number(2.06098), "2.060980");
  std::snprintf(buf, sizeof buf, "%.1f", 1.5);
  EXPECT_STREQ(buf, "1,5");  // format_c changed this thread's locale only for its call
  tunebench::use_c_numbers();
  std::snprintf(buf, sizeof buf, "%.1f", 1.5);
  EXPECT_STREQ(buf, "1.5");
}

TEST(OneLine, ControlsOfEveryKindAreEscapedAndUtf8Kept) {
  EXPECT_EQ(tunebench::escape_controls("a\nb\tc\x1b[2J\x7f"), "a\\nb\\tc\\x1b[2J\\x7f");
  // C1 controls: raw (an 8-bit terminal's CSI) and in UTF-8; malformed UTF-8 byte by byte.
  EXPECT_EQ(tunebench::escape_controls("x\x9by"), "x\\x9by");
  EXPECT_EQ(tunebench::escape_controls("x\xc2\x9b[2Jy"), "x\\xc2\\x9b[2Jy");
  EXPECT_EQ(tunebench::escape_controls("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(tunebench::escape_controls("\xe2\x82"), "\\xe2\\x82");           // truncated
  EXPECT_EQ(tunebench::escape_controls("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(tunebench::escape_controls("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  // Well-formed UTF-8 stays as it is: Latin-1 letters, CJK, emoji.
  EXPECT_EQ(tunebench::escape_controls("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
}
