#include "settings/invocation.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <unistd.h>

#include "common/regular_file.hpp"

namespace tunebench {
namespace {

namespace fs = std::filesystem;

bool matches_flag(std::string_view arg, std::string_view flag) {
  return arg == flag || (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag && arg[flag.size()] == '=');
}

}  // namespace

std::string absolute_text(const fs::path& p) {
  if (p.empty()) return "";
  std::error_code ec;
  const auto abs = fs::absolute(p, ec);
  return ec ? p.string() : abs.lexically_normal().string();
}

Invocation::Invocation(int argc, char** argv, const fs::path& default_shapes)
    : original_args_(argv + 1, argv + argc), command_(argv, argv + argc) {
  settings_ = parse_settings(&argc, argv, default_shapes);
  args_.assign(argv, argv + argc);
  // -h is what most tools take for help; Google Benchmark knows only --help.
  static char help_flag[] = "--help";
  for (auto& arg : args_) {
    if (std::string_view(arg) == "-h") arg = help_flag;
  }
  for (const char* arg : args_) {
    const std::string_view a = arg;
    for (const std::string_view flag : {"--benchmark_format=", "--benchmark_out_format="}) {
      if (a.substr(0, flag.size()) != flag) continue;
      const auto v = a.substr(flag.size());
      if (v != "console" && v != "json" && v != "csv") {
        throw std::invalid_argument(std::string(flag.substr(0, flag.size() - 1)) + "='" + std::string(v) +
                                    "': expected console, json or csv");
      }
      (flag == "--benchmark_format=" ? format_ : out_format_) = std::string(v);  // the last one wins, as in GB
    }
  }
  check_repetitions();
  check_min_time();
  check_time_unit();
  filter_given_ = has_flag("--benchmark_filter");
  listing_ = has_flag("--benchmark_list_tests") && !settings_.check_only;  // a check lists nothing
  help_ = has_flag("--help");  // Google Benchmark prints its usage and exits inside Initialize
  console_ = !has_flag("--benchmark_format") || std::any_of(args_.begin(), args_.end(), [](const char* a) {
    return std::string_view(a) == "--benchmark_format=console";
  });
  tabular_ = has_flag("--benchmark_counters_tabular");
  args_.push_back(nullptr);
  argc_ = static_cast<int>(args_.size()) - 1;
}

std::vector<std::string_view> Invocation::values_of(std::string_view flag) const {
  std::vector<std::string_view> values;
  for (const char* arg : args_) {
    const std::string_view a = arg;
    if (a.substr(0, flag.size()) == flag) values.push_back(a.substr(flag.size()));
  }
  return values;
}

// Google Benchmark 1.7.1 takes any int and then fails inside (a negative count reserves a huge
// vector, a huge one runs out of memory), after the run directory holds partial files.
void Invocation::check_repetitions() const {
  for (const std::string_view value : values_of("--benchmark_repetitions=")) {
    const std::string v(value);
    const bool digits = !v.empty() && v.size() <= 6 && v.find_first_not_of("0123456789") == std::string::npos;
    const long n = digits ? std::stol(v) : 0;
    if (!digits || n < 1 || n > 100000) {
      throw std::invalid_argument("--benchmark_repetitions='" + v +
                                  "': expected a whole number of repetitions, 1 to 100000");
    }
  }
}

// Google Benchmark 1.8 takes "100x" (iterations) and "1s"; 1.7.1 takes a plain double and
// answers anything else with two lines of its own. from_chars reads the "C" form (a '.' point)
// whatever the process's locale.
void Invocation::check_min_time() const {
  for (const std::string_view v : values_of("--benchmark_min_time=")) {
    double seconds = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    const bool parsed = !v.empty() && ec == std::errc() && end == v.data() + v.size() && std::isfinite(seconds);
    if (parsed && seconds < 0) {
      throw std::invalid_argument("--benchmark_min_time='" + std::string(v) + "': expected seconds >= 0, e.g. 0.5");
    }
    if (!parsed) {
      throw std::invalid_argument("--benchmark_min_time='" + std::string(v) +
                                  "': expected plain seconds, e.g. 0.5 (Google Benchmark 1.7.1 takes no iteration "
                                  "count 'Nx' and no 's' suffix)");
    }
  }
}

// Google Benchmark 1.7.1 answers any other unit with its usage text and exit status 0, after
// bench has made the run directory.
void Invocation::check_time_unit() const {
  for (const std::string_view v : values_of("--benchmark_time_unit=")) {
    if (v != "ns" && v != "us" && v != "ms" && v != "s") {
      throw std::invalid_argument("--benchmark_time_unit='" + std::string(v) + "': expected ns, us, ms or s");
    }
  }
}

bool Invocation::has_flag(const std::string& flag) const {
  return std::any_of(args_.begin() + 1, args_.end(), [&](const char* a) { return a && matches_flag(a, flag); });
}

bool Invocation::colour(bool automatic) const {
  // Google Benchmark's rule for the value (IsTruthyFlagValue): "", "auto" -> automatic; a word
  // starting 0, f, n or "off" -> no; anything else -> yes. The last --benchmark_color wins.
  std::string value = "auto";
  constexpr std::string_view flag = "--benchmark_color";
  for (const std::string& arg : original_args_) {  // args_ lose Google Benchmark's flags to Initialize
    if (!matches_flag(arg, flag)) continue;
    const std::string_view a = arg;
    value = a.size() > flag.size() + 1 ? std::string(a.substr(flag.size() + 1)) : "true";
  }
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char x) { return static_cast<char>(std::tolower(x)); });
  if (value.empty() || value == "auto") return automatic;
  return !(value[0] == '0' || value[0] == 'f' || value[0] == 'n' || value == "off");
}

std::string Invocation::route_output(const fs::path& run_dir) {
  args_.pop_back();  // the terminating nullptr
  if (!run_dir.empty() && !has_flag("--benchmark_out")) {
    // Named after --benchmark_out_format, so a CSV is never called results.json.
    std::string name = "results.json";
    for (const char* arg : args_) {
      const std::string_view a = arg;
      if (a == "--benchmark_out_format=csv") name = "results.csv";
      if (a == "--benchmark_out_format=console") name = "results.txt";
      if (a == "--benchmark_out_format=json") name = "results.json";
    }
    storage_.push_back(std::make_unique<std::string>("--benchmark_out=" + (run_dir / name).string()));
    args_.push_back(storage_.back()->data());
  }
  std::string target;
  constexpr std::string_view flag = "--benchmark_out=";
  for (auto& arg : args_) {
    const std::string_view a = arg;
    if (a.substr(0, flag.size()) == flag && a.size() > flag.size()) {
      target = std::string(a.substr(flag.size()));
      // The results are renamed onto the file at the end: through a link, onto what it leads to,
      // so the link stays and its file gets the results.
      std::error_code ec;
      if (fs::is_symlink(target, ec) && fs::is_regular_file(target, ec)) {
        if (const fs::path real = fs::canonical(target, ec); !ec) target = real.string();
      }
      storage_.push_back(std::make_unique<std::string>(std::string(flag) + target + ".incomplete"));
      arg = storage_.back()->data();
      break;
    }
  }
  args_.push_back(nullptr);
  argc_ = static_cast<int>(args_.size()) - 1;
  return target;
}

void Invocation::check_paths(const std::string& out_file) const {
  std::error_code ec;
  if (!out_file.empty()) {
    const fs::path out(out_file);
    if (fs::is_directory(out, ec)) {
      throw std::invalid_argument("--benchmark_out=" + out_file + ": is a folder, expected a file name");
    }
    // The results are renamed onto the path at the end, which would put a plain file in place of
    // a device, a FIFO or a socket (as root, /dev/null itself).
    if (fs::exists(fs::symlink_status(out, ec))) {
      if (const std::string kind = file_kind(out); kind != "a regular file") {
        throw std::invalid_argument("--benchmark_out=" + out_file + ": " + kind +
                                    ", expected a regular file or a new file name");
      }
    }
    const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec)) {
      throw std::invalid_argument("--benchmark_out=" + out_file + ": folder " + parent.string() + " does not exist");
    }
    if (const std::string kfs = kernel_file_system(parent); !kfs.empty()) {
      throw std::invalid_argument("--benchmark_out=" + out_file + ": folder " + parent.string() + " is on " + kfs +
                                  ", a kernel file system, expected a folder files can be written in");
    }
  }
  const fs::path& dir = settings_.kernel_cache;
  if (!dir.empty() && fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw std::invalid_argument("TUNEBENCH_KERNEL_CACHE='" + dir.string() + "': is not a folder");
  }
}

std::string Invocation::runs_folder_name() const {
  const fs::path& root = settings_.runs;
  return settings_.runs_from.empty()
             ? "runs folder '" + root.string() + "' (the default; TUNEBENCH_RUNS or --tunebench_runs choose another)"
             : settings_.runs_from + "='" + root.string() + "'";
}

void Invocation::check_runs_folder() const {
  const fs::path& root = settings_.runs;
  const std::string what = runs_folder_name();
  const std::string expected = "expected a folder to make run directories in";
  std::error_code ec;
  // The first of root and the folders above it that is there: a folder this user can write.
  fs::path p = fs::absolute(root, ec);
  if (ec) p = root;
  while (file_kind(p) == "missing" && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  const std::string kind = file_kind(p);
  const std::string where = p == fs::absolute(root, ec) || p == root ? "" : " (" + p.string() + ")";
  if (kind != "a folder") throw std::invalid_argument(what + ": " + kind + where + ", " + expected);
  if (::access(p.c_str(), W_OK | X_OK) != 0) {
    throw std::invalid_argument(what + ": the folder" + where + " is not writable by this user, " + expected);
  }
  if (const std::string kfs = kernel_file_system(p); !kfs.empty()) {
    throw std::invalid_argument(what + ": the folder" + where + " is on " + kfs + ", a kernel file system, " +
                                expected);
  }
}

}  // namespace tunebench
