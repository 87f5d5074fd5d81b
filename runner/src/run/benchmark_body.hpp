#pragma once
// Registering a family as a Google Benchmark benchmark and the body Google Benchmark runs.

#include <memory>

#include "plan/run_context.hpp"

namespace tunebench {

/// Registers `family` with benchmark::RegisterBenchmark: manual time in the op's time unit,
/// the config as the label (GPU ops: followed by the timing name in parentheses), counters
/// TFLOP/s and GB/s (over the mean iteration time), roofline% where the device's peaks are
/// known, and sm_mhz_start / sm_mhz_end (the SM clock before and after the timing loop, GPU
/// ops, where NVML can read it). The
/// config is the cached best of the family's key; a key not in the cache is autotuned first,
/// outside the measured time, and the result stored (with a read-only cache it is not tuned:
/// the benchmark ends with an error naming the cache and the key). A family of a GPU op on a machine without
/// a GPU, a sweep in which no config ran, or any exception from the op ends that benchmark with
/// SkipWithError and a reason; an iteration time that is zero or not finite likewise.
void register_family(const Family& family, std::shared_ptr<const RunContext> context);

}  // namespace tunebench
