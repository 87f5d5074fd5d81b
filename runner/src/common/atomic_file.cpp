#include "common/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace tunebench {

namespace fs = std::filesystem;

void write_file_atomically(const fs::path& target, std::string_view content) {
  static std::atomic<unsigned long> counter{0};
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return std::runtime_error("cannot write " + target.string() + ": " + why);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw fail("cannot create " + tmp.string());
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    // close() as well as flush(): a full disk may only show when the last buffer goes out.
    out.flush();
    out.close();
    if (!out) throw fail("write to " + tmp.string() + " failed");
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) throw fail("rename from " + tmp.string() + ": " + ec.message());
}

}  // namespace tunebench
