#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tune/autotuner.hpp"
#include "settings/options.hpp"
#include "sweep/parallel_warmup.hpp"

namespace tunebench {
namespace {

std::uint64_t parse_seed(std::string_view text, const std::string& what) {
  std::uint64_t v = 0;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), last, v);
  if (text.empty() || ptr != last || ec != std::errc()) {
    throw std::invalid_argument(what + "='" + std::string(text) +
                                "': expected a non-negative integer below 2^64");
  }
  return v;
}

}  // namespace

Options parse_options(int* argc, char** argv, const std::filesystem::path& default_shapes) {
  Options opt;
  opt.shapes = default_shapes;
  if (const char* env = std::getenv("TUNEBENCH_SHAPES")) {
    if (!*env) throw std::invalid_argument("TUNEBENCH_SHAPES is set but empty: expected a shape file or folder");
    opt.shapes = env;
  }
  bool seed_given = false, timing_given = false, runs_given = false;
  if (const char* env = std::getenv("REPLAY_FROM"); env && *env) opt.replay_from = env;
  opt.space = space_from_env();
  opt.warmup_gpus = warmup_gpus_from_env();
  const auto check_timing = [](const std::string& v, const std::string& what) {
    if (v != "kernel" && v != "cudagraph" && v != "event") {
      throw std::invalid_argument(what + "='" + v + "': expected kernel, cudagraph or event");
    }
    return v;
  };
  const auto check_bool = [](const std::string& v, const std::string& what) {
    if (v != "0" && v != "1") throw std::invalid_argument(what + "='" + v + "': expected 0 or 1");
    return v == "1";
  };
  bool cold_l2_given = false;

  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    constexpr std::string_view prefix = "--tunebench_";
    if (arg.substr(0, prefix.size()) != prefix) {
      argv[kept++] = argv[i];
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name(arg.substr(0, eq));
    if (eq == std::string_view::npos) {
      throw std::invalid_argument(name + ": expected " + name + "=VALUE");
    }
    const std::string_view value = arg.substr(eq + 1);
    if (name == "--tunebench_shapes") {
      if (value.empty()) throw std::invalid_argument("--tunebench_shapes: expected a shape file or folder");
      opt.shapes = std::string(value);
    } else if (name == "--tunebench_seed") {
      opt.seed = parse_seed(value, name);
      seed_given = true;
    } else if (name == "--tunebench_shard") {
      const auto colon = value.find(':');
      if (colon == std::string_view::npos) throw std::invalid_argument(name + ": expected INDEX:FILE");
      opt.shard = static_cast<int>(parse_seed(value.substr(0, colon), name));
      opt.shard_list = std::string(value.substr(colon + 1));
    } else if (name == "--tunebench_runs") {
      if (value.empty()) throw std::invalid_argument("--tunebench_runs: expected a folder");
      opt.runs = std::string(value);
      runs_given = true;
    } else if (name == "--tunebench_timing") {
      opt.timing = check_timing(std::string(value), name);
      timing_given = true;
    } else if (name == "--tunebench_cold_l2") {
      opt.cold_l2 = check_bool(std::string(value), name);
      cold_l2_given = true;
    } else if (name == "--tunebench_cache") {
      if (value.empty()) throw std::invalid_argument("--tunebench_cache: expected a cache file");
      opt.cache = std::string(value);
    } else {
      throw std::invalid_argument(name + ": unknown flag (tunebench flags: --tunebench_shapes, --tunebench_seed, --tunebench_cache, --tunebench_timing, --tunebench_cold_l2, --tunebench_runs)");
    }
  }
  // The environment fills in what no flag gave (and is only checked then).
  if (const char* env = std::getenv("TUNEBENCH_SEED"); env && !seed_given) opt.seed = parse_seed(env, "TUNEBENCH_SEED");
  if (const char* env = std::getenv("TUNEBENCH_RUNS"); env && *env && !runs_given) opt.runs = env;
  if (const char* env = std::getenv("TUNEBENCH_TIMING"); env && !timing_given) {
    opt.timing = check_timing(env, "TUNEBENCH_TIMING");
  }
  if (const char* env = std::getenv("TUNEBENCH_ISOLATE_SWEEP")) {
    const std::string v(env);
    if (v != "auto" && v != "0" && v != "1") {
      throw std::invalid_argument("TUNEBENCH_ISOLATE_SWEEP='" + v + "': expected auto, 0 or 1");
    }
    opt.isolate_sweep = v == "auto" ? -1 : v == "1" ? 1 : 0;
  }
  hang_timeout_s();  // a bad TUNEBENCH_HANG_TIMEOUT stops bench now, not when a sweep starts
  if (const char* env = std::getenv("TUNEBENCH_COLD_L2"); env && !cold_l2_given) {
    opt.cold_l2 = check_bool(env, "TUNEBENCH_COLD_L2");
  }
  *argc = kept;
  argv[kept] = nullptr;
  return opt;
}

}  // namespace tunebench
