#include "kernel_source.hpp"

#include <cctype>
#include <set>
#include <stdexcept>

namespace tunebench::bench {
namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The quoted name of an `#include "name"` line, or "" for any other line.
std::string quoted_include(const std::string& line) {
  const std::string t = trimmed(line);
  const std::string directive = "#include \"";
  if (t.rfind(directive, 0) != 0 || t.back() != '"' || t.size() <= directive.size() + 1) return "";
  return t.substr(directive.size(), t.size() - directive.size() - 1);
}

void inline_file(const KernelFiles& files, const std::string& name, const std::string& from,
                 std::set<std::string>& done, std::string& out) {
  const auto it = files.find(name);
  if (it == files.end()) {
    throw std::logic_error("kernel source: " + (from.empty() ? "" : from + " includes ") + "\"" + name +
                           "\", which is not an embedded kernel file (bench/CMakeLists.txt)");
  }
  done.insert(name);
  const std::string& text = it->second;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    const std::string include = quoted_include(line);
    if (!include.empty()) {
      if (!done.count(include)) inline_file(files, include, name, done, out);
    } else if (trimmed(line) != "#pragma once") {
      out += line;
      out += '\n';
    }
  }
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier or number that ends just before `i`.
std::string token_before(const std::string& s, std::size_t i) {
  std::size_t j = i;
  while (j > 0 && identifier_char(s[j - 1])) --j;
  return s.substr(j, i - j);
}

// The end (one past the closing quote) of the literal opened by the quote at `i`; a literal
// left open ends at its line's end.
std::size_t quoted_end(const std::string& s, std::size_t i) {
  const char quote = s[i];
  for (std::size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') {
      ++j;
    } else if (s[j] == quote) {
      return j + 1;
    } else if (s[j] == '\n') {
      return j;
    }
  }
  return s.size();
}

// The end of the raw string literal whose R is at `i`, or npos when none starts there.
std::size_t raw_end(const std::string& s, std::size_t i) {
  if (s.compare(i, 2, "R\"") != 0) return std::string::npos;
  const std::string prefix = token_before(s, i);
  if (!prefix.empty() && prefix != "u8" && prefix != "u" && prefix != "U" && prefix != "L") return std::string::npos;
  const std::size_t open = s.find('(', i + 2);
  if (open == std::string::npos || open - (i + 2) > 16) return std::string::npos;
  const std::string close = ")" + s.substr(i + 2, open - (i + 2)) + "\"";
  const std::size_t end = s.find(close, open + 1);
  return end == std::string::npos ? s.size() : end + close.size();
}

}  // namespace

std::string flatten_includes(const KernelFiles& files, const std::string& file) {
  std::set<std::string> done;
  std::string out;
  inline_file(files, file, "", done, out);
  return out;
}

std::string without_comments(const std::string& s) {
  std::string out, line;
  bool blank = false;  // whether `line` ends in a blank that is not part of a literal
  const auto end_line = [&] {
    if (blank) line.pop_back();
    if (!line.empty()) out += line + '\n';
    line.clear();
    blank = false;
  };
  // Outside literals, a run of blanks (a comment among them) is one space, none at a line's ends.
  const auto add_blank = [&] {
    if (!line.empty() && !blank) line += ' ';
    blank = !line.empty();
  };
  const auto add = [&](std::size_t from, std::size_t to) {
    line.append(s, from, to - from);
    blank = false;
  };
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\n') {
      end_line();
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      add_blank();
      ++i;
    } else if (s.compare(i, 2, "//") == 0) {
      // A backslash-newline continues the comment (line splicing comes before comments).
      for (i += 2; i < s.size() && s[i] != '\n'; ++i) {
        if (s[i] == '\\' && s.compare(i + 1, 1, "\n") == 0)
          ++i;
        else if (s[i] == '\\' && s.compare(i + 1, 2, "\r\n") == 0)
          i += 2;
      }
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t close = s.find("*/", i + 2);
      i = close == std::string::npos ? s.size() : close + 2;
      add_blank();
    } else if (const std::size_t raw = raw_end(s, i); raw != std::string::npos) {
      add(i, raw);
      i = raw;
    } else if (c == '"' || (c == '\'' && !std::isdigit(static_cast<unsigned char>(token_before(s, i).c_str()[0])))) {
      // A quote after a number is a digit separator (1'000), not a character literal.
      const std::size_t end = quoted_end(s, i);
      add(i, end);
      i = end;
    } else {
      add(i, i + 1);
      ++i;
    }
  }
  end_line();
  return out;
}

}  // namespace tunebench::bench
