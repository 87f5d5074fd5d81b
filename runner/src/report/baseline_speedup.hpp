#pragma once
// The baseline beside the op in the JSON: a speedup counter on each entry of an op that declares
// a baseline (Op::baseline) measured for the same shape in the run.

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/family.hpp"

namespace tunebench {

/// Adds "baseline_speedup" (the baseline's time / the entry's real_time, both in seconds from
/// their time_unit) to every entry of `doc` (Google Benchmark JSON) whose family's op has a
/// baseline that ran, without an error, for the same shape (set, gemm, M, N, K). The baseline's
/// time is its median aggregate where it has one, else its first iteration entry; the op's
/// aggregates get it too (a cv or stddev entry does not: a ratio of spreads is no speedup).
/// Entries are matched to families by run_name. Returns how many entries got one.
int add_baseline_speedups(nlohmann::json& doc, const std::vector<Family>& families);

}  // namespace tunebench
