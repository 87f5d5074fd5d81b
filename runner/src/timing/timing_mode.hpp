#pragma once
// The ways a GPU op's runs are timed, as a type with one table of names.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tunebench {

/// A value of one of the timing enumerations below with its name, as flags, the JSON context,
/// the cache key and the benchmark label spell it.
template <class E>
struct Named {
  E value;
  const char* name;
};

/// How GPU ops are timed (host ops always on the host's steady clock). docs/timing.md.
enum class TimingMode {
  kKernel,     ///< eager launches, each run the sum of its kernels' CUPTI durations
  kCudaGraph,  ///< each run captured once into CUDA graphs and replayed; CUPTI durations by graph
  kEvent,      ///< CUDA events around the eager launches, launch gaps included (no CUPTI)
};

/// Every mode with its name, in the order help texts list them: the one table the flag parser,
/// the cache key, the JSON context and the benchmark label read.
using TimingModeName = Named<TimingMode>;  ///< names "kernel", "cudagraph", "event"
const std::vector<TimingModeName>& timing_mode_names();

/// The name of `mode` in timing_mode_names().
const char* to_string(TimingMode mode);

/// The mode called `name`, or nothing for a name not in the table.
std::optional<TimingMode> parse_timing_mode(std::string_view name);

/// The accepted names joined for messages: "kernel, cudagraph or event".
std::string timing_mode_choices();

/// Whether `mode` reads kernel durations from CUPTI (kernel, cudagraph).
bool uses_cupti(TimingMode mode);

/// How Google Benchmark's timing loop launches a GPU op's runs in the CUPTI modes (kernel,
/// cudagraph). docs/timing.md, "Graph-batched loop".
enum class TimingLoop {
  kGraph,  ///< batches of runs captured once into a CUDA graph and launched as one graph
  kEager,  ///< one launch (or per-run graph replay) per iteration, as before graph batching
};

/// Every loop with its name, the one table the flag parser and the JSON context read.
using TimingLoopName = Named<TimingLoop>;  ///< names "graph", "eager"
const std::vector<TimingLoopName>& timing_loop_names();

/// The name of `loop` in timing_loop_names().
const char* to_string(TimingLoop loop);

/// The loop called `name`, or nothing for a name not in the table.
std::optional<TimingLoop> parse_timing_loop(std::string_view name);

/// The accepted names joined for messages: "graph or eager".
std::string timing_loop_choices();

/// How many iterations Google Benchmark's loop gives a benchmark (docs/timing.md, "Iteration
/// counts").
enum class IterationSizing {
  /// A benchmark whose config has a stored time (the cache's measurement of the config the run
  /// will time) gets the count Google Benchmark's probe rounds would settle on, given up front
  /// (sized_iterations): no probe rounds. Others are probed.
  kSized,
  /// Google Benchmark's own probe rounds (1, 10, 100, ... iterations until min_time is reached).
  kProbed,
};

/// Every sizing with its name, the one table the flag parser and the JSON context read.
using IterationSizingName = Named<IterationSizing>;  ///< names "sized", "probed"
const std::vector<IterationSizingName>& iteration_sizing_names();

/// The name of `sizing` in iteration_sizing_names().
const char* to_string(IterationSizing sizing);

/// The sizing called `name`, or nothing for a name not in the table.
std::optional<IterationSizing> parse_iteration_sizing(std::string_view name);

/// The accepted names joined for messages: "sized or probed".
std::string iteration_sizing_choices();

}  // namespace tunebench
