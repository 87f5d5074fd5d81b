#include "tunebench/cache/write_error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace tunebench::cache {

std::string FirstWriteError::why() const {
  if (!failed_) return "";
  return errno_ != 0 ? std::strerror(errno_) : "a write failed";
}

void FirstWriteError::note(bool ok, int saved) {
  if (ok) {
    errno = saved;  // a write that went through leaves errno as it found it
    return;
  }
  if (!failed_) errno_ = errno;
  failed_ = true;
}

FirstWriteError::int_type FirstWriteError::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const int saved = errno;
  errno = 0;
  const int_type r = inner_->sputc(traits_type::to_char_type(c));
  note(!traits_type::eq_int_type(r, traits_type::eof()), saved);
  return r;
}

std::streamsize FirstWriteError::xsputn(const char* s, std::streamsize n) {
  const int saved = errno;
  errno = 0;
  const std::streamsize written = inner_->sputn(s, n);
  note(written == n, saved);
  return written;
}

int FirstWriteError::sync() {
  const int saved = errno;
  errno = 0;
  const int r = inner_->pubsync();
  note(r == 0, saved);
  return r;
}

WatchedStdout::WatchedStdout() : original_(std::cout.rdbuf()), watch_(original_) { std::cout.rdbuf(&watch_); }

WatchedStdout::~WatchedStdout() { std::cout.rdbuf(original_); }

std::string WatchedStdout::flush_failure() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int flush_errno = errno;
  if (watch_.failed()) return watch_.why();
  if (flushed && !std::ferror(stdout) && std::cout.good()) return "";
  return flush_errno != 0 ? std::strerror(flush_errno) : "a write failed";
}

}  // namespace tunebench::cache
