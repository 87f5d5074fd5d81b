#include "report/json_context.hpp"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <sstream>
#include <string>

#include "context/context_setup.hpp"
#include "cuda/gpu_clock.hpp"
#include "settings/invocation.hpp"
#include "timing/cupti_timer.hpp"
#include "timing/op_timing.hpp"
#include "tunebench/version.hpp"

namespace tunebench {
namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

void add_gpu_context(const RunContext& c, const OpList& ops) {
  benchmark::AddCustomContext("gpu_name", c.device.name);
  benchmark::AddCustomContext("gpu_compute_capability",
                              std::to_string(c.device.cc_major) + "." + std::to_string(c.device.cc_minor));
  benchmark::AddCustomContext("gpu_sm_count", std::to_string(c.device.sm_count));
  benchmark::AddCustomContext("tunebench_timing_loop",
                              to_string(uses_cupti(c.timing_mode) ? c.timing_loop : TimingLoop::kEager));
  const SmClock clock = read_sm_clock(0);
  benchmark::AddCustomContext("gpu_sm_clock_mhz_start",
                              clock.mhz ? std::to_string(*clock.mhz) : "unknown (" + clock.error + ")");
  benchmark::AddCustomContext("gpu_uuid", c.device.uuid);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  benchmark::AddCustomContext("cuda_driver_version", version_text(driver));
  benchmark::AddCustomContext("cuda_runtime_version", version_text(runtime));
  benchmark::AddCustomContext("cupti_version", std::to_string(CuptiTimer::version()));
  std::string peaks = "unknown for this device: no roofline% counter";
  for (const auto& op : ops) {
    const RooflinePeaks p = op->needs_gpu() ? op->roofline_peaks(c.device) : RooflinePeaks{};
    if (p.flops > 0 && p.bytes_per_s > 0) {
      peaks = p.source;
      break;
    }
  }
  benchmark::AddCustomContext("roofline_peaks", peaks);
}

std::string this_host() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

// Google Benchmark says itself whether it was built without NDEBUG (Debian's libbenchmark 1.7.1
// is): its basic context then carries the DEBUG warning that every run prints.
bool benchmark_library_is_debug() {
  std::ostringstream context;
  benchmark::BenchmarkReporter::PrintBasicContext(&context, benchmark::BenchmarkReporter::Context());
  return context.str().find("Library was built as DEBUG") != std::string::npos;
}

}  // namespace

const char* const kLibraryBuildNote =
    "Google Benchmark was built without NDEBUG (Debian's libbenchmark), so its own consistency checks "
    "(BM_CHECK) run, outside the measured time: the times reported are manual times measured by tunebench "
    "(CUPTI kernel durations, CUDA events, or the host clock around a host op), built in Release, and do not "
    "include them; only the cpu_time of each entry contains the library's loop and its checks";

void add_run_context(const RunContext& context, const Settings& settings, const GpuProbe& gpu, const OpList& ops) {
  benchmark::AddCustomContext("tunebench_version", kVersion);
  benchmark::AddCustomContext("tunebench_git_revision", kGitRevision);
  benchmark::AddCustomContext("tunebench_shapes", absolute_text(settings.shapes));
  benchmark::AddCustomContext("tunebench_seed", std::to_string(settings.seed));
  benchmark::AddCustomContext("tunebench_host", this_host());
  benchmark::AddCustomContext("cuda_devices", gpu.available() ? std::to_string(gpu.count) : "0 (" + gpu.reason + ")");
  benchmark::AddCustomContext("timing_mode", run_timing_name(context));
  if (gpu.available()) add_gpu_context(context, ops);
  if (benchmark_library_is_debug()) benchmark::AddCustomContext("tunebench_library_build_note", kLibraryBuildNote);
}

}  // namespace tunebench
