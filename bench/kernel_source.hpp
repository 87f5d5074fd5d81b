#pragma once
// Kernel sources as NVRTC gets them: a kernel file with its quoted includes inlined from the
// files embedded in the binary (bench/CMakeLists.txt), and the text a kernel version hashes.

#include <map>
#include <string>

namespace tunebench::bench {

/// Kernel files by name ("mxfp4_common.cuh"): their text as embedded at build time.
using KernelFiles = std::map<std::string, std::string>;

/// The translation unit of `file`: each line `#include "name"` replaced by the text of `name`
/// from `files` (recursively, each file inlined once, at its first include) and each
/// `#pragma once` line dropped, so NVRTC compiles it without a source tree or include paths.
/// Angle-bracket includes are left alone. Throws std::logic_error naming the file for a file or
/// an include that `files` does not hold (the embedded set is fixed when bench is built).
std::string flatten_includes(const KernelFiles& files, const std::string& file);

/// `source` with what cannot change the compiled code taken out: comments (a block comment
/// counts as a blank, as the preprocessor makes it one space; a line comment ends at its
/// newline, or continues past a backslash-newline as in C++), blanks at the start and end of a
/// line, blank lines, and each run of blanks within a line made one space. String, character
/// and raw string literals are kept byte for byte, comment-like text and blanks in them
/// included. A kernel version hashed over this text survives an edit of comments, indentation
/// or blank lines and changes with any edit of code.
std::string without_comments(const std::string& source);

}  // namespace tunebench::bench
