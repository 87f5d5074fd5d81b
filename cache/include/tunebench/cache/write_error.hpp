#pragma once
// Why output could not be written, as the write that failed said it: shared by bench's stdout
// and tunebench-cache's (stdout and an export's file).

#include <streambuf>
#include <string>

namespace tunebench::cache {

/// A stream buffer that passes every write to `inner` and keeps the errno of the first one that
/// fails. A C++ stream whose write failed writes nothing more (its badbit), so by the time a
/// program checks it at the end, errno holds something else or nothing, and output larger than
/// the buffers (a long listing on a full disk) could only be reported as "a write failed". Not
/// buffered itself; does not own `inner`, which must outlive it.
class FirstWriteError : public std::streambuf {
 public:
  explicit FirstWriteError(std::streambuf* inner) : inner_(inner) {}

  /// Whether a write (or flush) through this buffer has failed.
  bool failed() const { return failed_; }
  /// Why the first failed write failed: strerror of its errno ("No space left on device"), "a
  /// write failed" when it set none; "" when none failed.
  std::string why() const;

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  // Records errno when `ok` is false (the first failure only), else restores `saved`.
  void note(bool ok, int saved);

  std::streambuf* inner_;
  bool failed_ = false;
  int errno_ = 0;
};

/// While it lives, std::cout writes through a FirstWriteError over its own buffer; restores the
/// buffer when it goes. Make one for the whole program's output, before anything is written.
class WatchedStdout {
 public:
  WatchedStdout();
  ~WatchedStdout();
  WatchedStdout(const WatchedStdout&) = delete;
  WatchedStdout& operator=(const WatchedStdout&) = delete;

  /// Flushes std::cout and C's stdout; "" when everything written to them got there, else why
  /// not: the first failed write's error (FirstWriteError::why), else the flush's.
  std::string flush_failure();

 private:
  std::streambuf* original_;
  FirstWriteError watch_;
};

}  // namespace tunebench::cache
