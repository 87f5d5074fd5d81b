#pragma once
// Kernel-level timing with the CUPTI activity API: the GPU's own start and end of each kernel,
// without the launch overhead CUDA events include.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "timing/kernel_records.hpp"

namespace tunebench {

/// Times windows of work launched from the calling thread. CUPTI is started once per process
/// (CONCURRENT_KERNEL activity records, a buffer per request, runtime and driver API callbacks
/// to learn the correlation ids of the calls made inside a window). Kernels launched outside
/// a window (an L2 flush, an input reset) or by other threads are not counted.
class CuptiTimer {
 public:
  /// Whether CUPTI can be used in this process; if not, `reason` says why (e.g. another
  /// profiler already subscribed). Starts CUPTI on the first call that succeeds.
  static bool available(std::string* reason);
  /// cuptiGetVersion(): the CUPTI API version, 0 if it cannot be read.
  static unsigned version();

  /// Requires available(). Windows opened on this thread belong to this timer.
  CuptiTimer();
  ~CuptiTimer();
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  /// Makes room for `windows` windows, so opening them allocates nothing (timing loops call
  /// this once with their iteration count).
  void reserve(std::size_t windows);
  /// Opens a window: the CUDA API calls this thread makes until end() are the op's.
  void begin();
  /// Closes the window (host cost: a vector append; no synchronization, no flush).
  void end();
  /// Notes that the open window launched `graph` (see graph_launch): CUPTI reports a graph's
  /// kernels by graph, not by the launch call, so attribution needs it. Throws
  /// std::logic_error when no window was opened.
  void launched(const GraphLaunch& graph);
  /// Waits for the device, forces CUPTI to deliver every record, and attributes them to the runs
  /// of `launches` launches of `graph` made since the last collect, outside every window
  /// (attribute_graph_runs: run i of a launch runs kernels_per_run[i] kernels). Throws
  /// std::logic_error when windows are pending, std::runtime_error if CUPTI dropped records.
  WindowTimes collect_graph_runs(const GraphLaunch& graph, const std::vector<std::size_t>& kernels_per_run,
                                 std::size_t launches);
  /// The ids under which CUPTI reports the kernels of `exec` (instantiated from `graph`), which
  /// runs `kernels` kernel nodes per launch. Throws std::runtime_error if CUPTI cannot say.
  static GraphLaunch graph_launch(cudaGraph_t graph, cudaGraphExec_t exec, std::size_t kernels);
  /// Waits for the device, forces CUPTI to deliver every record, and attributes them to the
  /// windows closed since the last collect (in order); records of no window are discarded
  /// (so a collect after warmup launches clears them away). Throws std::runtime_error if CUPTI
  /// dropped records (the times would be undercounted).
  WindowTimes collect();
  /// Abandons the windows since the last collect (a batch that failed): closes the open one,
  /// forgets them, and, when the device still synchronises, flushes their records away so none
  /// is attributed to a later window. Never throws.
  void discard() noexcept;

 private:
  std::vector<WindowIds> windows_;
  std::vector<WindowIds> spare_ids_;  // preallocated id lists for begin()
};

}  // namespace tunebench
