#pragma once
// A batch of an op's runs timed back to back: what the autotuner's strategies time through and
// what OpTiming provides (op_timing.hpp), declared here so that timing/ needs nothing of tune/.

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tunebench/config.hpp"

namespace tunebench {

/// Times a batch of runs launched back to back, in the order given (a config may appear several
/// times, and several configs may be interleaved), and returns each run's time in that order
/// (kernel time for GPU ops): one synchronisation and one collection of kernel records per batch,
/// not per run. Throws on failure; a batch that throws yields no times.
using RunTimer = std::function<std::vector<std::chrono::nanoseconds>(const std::vector<Config>& runs)>;

/// Thrown by a RunTimer when run `run` of a batch failed, with what that run threw as `cause`
/// (a CompileError, a CudaError, ...), so a strategy knows which config it was. A failure found
/// only when the batch's kernel records are collected names no run: it is thrown as itself.
class BatchRunError : public std::runtime_error {
 public:
  BatchRunError(std::size_t run_index, std::exception_ptr what_it_threw, const std::string& message)
      : std::runtime_error(message), run(run_index), cause(std::move(what_it_threw)) {}
  std::size_t run;
  std::exception_ptr cause;
};

/// A RunTimer that times each run of a batch with `one`, one after the other (timers without a
/// batched form: tests, host clocks); what run i throws is thrown as BatchRunError(i).
RunTimer run_by_run(std::function<std::chrono::nanoseconds(const Config& config)> one);

}  // namespace tunebench
