#pragma once
// What tunebench adds to the "context" of Google Benchmark's output (README: "Reading the
// output"), through benchmark::AddCustomContext. The sweep's entries are the sweep stage's
// (sweep_context in sweep/sweep_stage.hpp).

#include "context/run_context.hpp"
#include "tunebench/device.hpp"

namespace tunebench {

/// What Google Benchmark's DEBUG warning does and does not affect (one line; README.md, "Reading
/// the output", says the same).
extern const char* const kLibraryBuildNote;

/// The run's own fields: tunebench_version, tunebench_git_revision, tunebench_shapes (absolute),
/// tunebench_seed, cuda_devices, timing_mode (run_timing_name: "host" for a run of host ops
/// alone), and on a machine with a GPU its name, compute capability, SM count,
/// gpu_sm_clock_mhz_start, gpu_uuid, driver, runtime and CUPTI versions and where the roofline
/// peaks of the first GPU op that knows them come from (Op::roofline_peaks); and, when the linked
/// Google Benchmark was built without NDEBUG (its `library_build_type` is "debug" and it warns
/// "Library was built as DEBUG"), tunebench_library_build_note: kLibraryBuildNote.
void add_run_context(const RunContext& context, const Settings& settings, const GpuProbe& gpu, const OpList& ops);

}  // namespace tunebench
