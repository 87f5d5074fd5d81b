#pragma once
// Kernel activity records and their attribution to timing windows: the part of kernel-level
// timing that needs no GPU, so it is tested everywhere.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tunebench {

/// One kernel execution as CUPTI reports it (CUpti_ActivityKernel10: start, end in ns of the
/// GPU timestamp clock; correlationId of the API call that launched it; graphId, nonzero when a
/// CUDA graph launch ran it).
struct KernelRecord {
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t graph_id = 0;
};

/// A CUDA graph launched inside a window: the ids CUPTI may report for its kernels (the graph's
/// and the executable graph's, cuptiGetGraphId / cuptiGetGraphExecId) and how many kernel nodes
/// one launch runs.
struct GraphLaunch {
  std::uint32_t graph_id = 0;  ///< cuptiGetGraphId of the captured graph
  std::uint32_t exec_id = 0;   ///< cuptiGetGraphExecId of its instantiation
  std::size_t kernels = 0;     ///< kernel nodes one launch runs (child graphs included)
};

/// What happened inside one timing window.
struct WindowIds {
  /// Correlation ids of the CUDA API calls the timing thread made while the window was open.
  std::vector<std::uint32_t> calls;
  /// Graphs launched in the window, in launch order.
  std::vector<GraphLaunch> graphs;
};

/// Result of attributing records to windows.
struct WindowTimes {
  /// Per window, the sum of the durations (end - start) of its kernels, in ns; 0 when no valid
  /// record belongs to it. A multi-kernel op is the sum of its kernels, not the span from the
  /// first start to the last end: gaps between its kernels are launch cost, not kernel time.
  std::vector<std::int64_t> ns;
  std::vector<std::size_t> kernels;  ///< valid records per window
  std::size_t invalid = 0;           ///< records with a zero timestamp or end < start, dropped
  std::size_t duplicates = 0;        ///< records seen twice (same correlation id, start, end), dropped
  std::size_t unattributed = 0;      ///< valid records of no window (harness work, other threads)
};

/// Attributes each record to a window, in two passes:
/// 1. by launch: the window whose API-call correlation ids contain the record's correlation id;
/// 2. by graph (records of graph launches that pass 1 did not place, since CUPTI gives graph
///    kernels no launch callback of their own): records of one graph id, in start order, are
///    dealt to that graph's launches in window order, each launch taking its kernel count. So
///    a launch of the graph outside every window must have been collected away first (the
///    timer does so after capturing and warming a graph); surplus records are unattributed.
/// Windows are in the order they were opened; a correlation id appears in at most one window.
WindowTimes attribute(const std::vector<KernelRecord>& records, const std::vector<WindowIds>& windows);

/// Attributes the records of `launches` launches of one graph whose runs execute one after
/// another (a chain, as a capture of runs on one stream makes), run i of each launch running
/// kernels_per_run[i] kernels: the records of the graph (graph or executable-graph id, the
/// first that has records), in start order, are dealt to the runs in launch order, each taking
/// its kernel count. One "window" per run (launches x kernels_per_run.size(), in order); other
/// records are unattributed; invalid and duplicate records are dropped and counted as in
/// attribute(). Nothing is kept per run but its sum and count, so a launch of 100,000 runs costs
/// a sort of its records.
WindowTimes attribute_graph_runs(std::vector<KernelRecord> records, const GraphLaunch& graph,
                                 const std::vector<std::size_t>& kernels_per_run, std::size_t launches);

}  // namespace tunebench
