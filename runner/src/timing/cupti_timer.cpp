#include "timing/cupti_timer.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "tunebench/cuda.hpp"

namespace tunebench {
namespace {

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::size_t kAlign = 8;

std::mutex g_mutex;
std::vector<KernelRecord> g_records;  // delivered, not yet collected
bool g_started = false;
std::string g_failure;

// The window open on this thread, if any: callbacks append the ids of API calls made in it.
thread_local WindowIds* t_window = nullptr;

std::string cupti_error(CUptiResult r, const char* call) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return std::string(call) + ": " + (text ? text : "unknown CUPTI error");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // One fresh buffer per request: CUDA 13 hands buffers out per thread, so a shared static
  // buffer would have records read twice.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<KernelRecord> parsed;
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      parsed.push_back({k->start, k->end, k->correlationId, k->graphId});
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.insert(g_records.end(), parsed.begin(), parsed.end());
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (t_window && info->callbackSite == CUPTI_API_ENTER) t_window->calls.push_back(info->correlationId);
}

bool start(std::string* reason) {
  CUpti_SubscriberHandle subscriber;
  CUptiResult r = cuptiSubscribe(&subscriber, on_api, nullptr);
  if (r != CUPTI_SUCCESS) {
    *reason = cupti_error(r, "cuptiSubscribe");
    return false;
  }
  for (auto domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    if ((r = cuptiEnableDomain(1, subscriber, domain)) != CUPTI_SUCCESS) {
      *reason = cupti_error(r, "cuptiEnableDomain");
      cuptiUnsubscribe(subscriber);
      return false;
    }
  }
  if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS ||
      (r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
    *reason = cupti_error(r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
    cuptiUnsubscribe(subscriber);
    return false;
  }
  return true;
}

}  // namespace

bool CuptiTimer::available(std::string* reason) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_started && g_failure.empty()) {
    std::string why;
    if (start(&why)) {
      g_started = true;
    } else {
      g_failure = why;
    }
  }
  if (!g_started && reason) *reason = g_failure;
  return g_started;
}

unsigned CuptiTimer::version() {
  uint32_t v = 0;
  return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

CuptiTimer::CuptiTimer() {
  std::string why;
  if (!available(&why)) throw std::runtime_error("CUPTI unavailable: " + why);
}

CuptiTimer::~CuptiTimer() {
  if (t_window && !windows_.empty() && t_window == &windows_.back()) t_window = nullptr;
}

void CuptiTimer::reserve(std::size_t windows) {
  windows_.reserve(windows);
  spare_ids_.reserve(windows);
  for (std::size_t i = spare_ids_.size(); i < windows; ++i) {
    spare_ids_.emplace_back();
    spare_ids_.back().calls.reserve(16);
    spare_ids_.back().graphs.reserve(1);
  }
}

void CuptiTimer::begin() {
  if (!spare_ids_.empty()) {
    windows_.push_back(std::move(spare_ids_.back()));
    spare_ids_.pop_back();
  } else {
    windows_.emplace_back();
  }
  t_window = &windows_.back();
}

void CuptiTimer::end() { t_window = nullptr; }

void CuptiTimer::launched(const GraphLaunch& graph) {
  if (windows_.empty()) throw std::logic_error("CuptiTimer::launched outside a window");
  windows_.back().graphs.push_back(graph);
}

GraphLaunch CuptiTimer::graph_launch(cudaGraph_t graph, cudaGraphExec_t exec, std::size_t kernels) {
  GraphLaunch g;
  g.kernels = kernels;
  CUptiResult r = cuptiGetGraphId(reinterpret_cast<CUgraph>(graph), &g.graph_id);
  if (r != CUPTI_SUCCESS) throw std::runtime_error(cupti_error(r, "cuptiGetGraphId"));
  r = cuptiGetGraphExecId(reinterpret_cast<CUgraphExec>(exec), &g.exec_id);
  if (r != CUPTI_SUCCESS) throw std::runtime_error(cupti_error(r, "cuptiGetGraphExecId"));
  return g;
}

void CuptiTimer::discard() noexcept {
  t_window = nullptr;
  windows_.clear();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  if (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.clear();
}

namespace {

// Every record CUPTI holds, once the device is idle. Throws when CUPTI dropped records.
std::vector<KernelRecord> delivered_records() {
  // Synchronize first: a forced flush of a kernel still running can deliver it with end = 0.
  TUNEBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) throw std::runtime_error(cupti_error(r, "cuptiActivityFlushAll"));
  size_t dropped = 0;
  r = cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::vector<KernelRecord> records;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    records.swap(g_records);
  }
  if (r == CUPTI_SUCCESS && dropped > 0) {
    throw std::runtime_error("CUPTI dropped " + std::to_string(dropped) +
                             " activity records: times would be undercounted");
  }
  return records;
}

}  // namespace

WindowTimes CuptiTimer::collect() {
  t_window = nullptr;
  auto windows = std::move(windows_);
  windows_.clear();
  return attribute(delivered_records(), windows);
}

WindowTimes CuptiTimer::collect_graph_runs(const GraphLaunch& graph, const std::vector<std::size_t>& kernels_per_run,
                                           std::size_t launches) {
  if (t_window || !windows_.empty()) throw std::logic_error("CuptiTimer::collect_graph_runs with windows pending");
  return attribute_graph_runs(delivered_records(), graph, kernels_per_run, launches);
}

}  // namespace tunebench
