#include "graphs.h"

#include <algorithm>
#include <string>

#include "attn/cuda_check.h"
#include "caching_allocator.h"
#include "device_guard.h"
#include "devices.h"
#include "errors.h"
#include "streams.h"

namespace attn {

void throw_if_capturing(gpuStream_t stream, const char* what, const char* instead) {
  gpuStreamCaptureStatus status = gpuStreamCaptureStatusNone;
  ATTN_CUDA_CHECK(gpuStreamIsCapturing(stream, &status));
  if (status == gpuStreamCaptureStatusNone) return;
  throw InvalidArgument(std::string(what) +
                            " cannot run while its stream captures a graph: a graph records device work only, "
                            "and this waits on the host. " +
                            instead,
                        "ATTN_GRAPH_CAPTURE_UNSUPPORTED");
}

void refuse_during_capture(const char* what, const char* instead) {
  const int device = GraphRegistry::instance().capturing_device();
  if (device < 0) return;
  throw InvalidArgument(std::string(what) + " cannot run while device " + std::to_string(device) +
                            " captures a graph: it waits on the host, which a graph cannot record. " + instead,
                        "ATTN_GRAPH_CAPTURE_UNSUPPORTED");
}

GraphRegistry& GraphRegistry::instance() {
  // Never destroyed, as the allocator: graphs outlive static destruction order at exit.
  static GraphRegistry* registry = new GraphRegistry();
  return *registry;
}

void GraphRegistry::begin(int device) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(mu_);
  if (!captures_.empty()) {
    throw InvalidArgument(
        "a graph capture is already underway on device " + std::to_string(captures_.begin()->first) +
            "; captures do not nest: end the first (return from its function) before starting another",
        "ATTN_GRAPH_NESTED");
  }
  gpuStream_t stream = StreamRegistry::instance().current(device);
  DeviceGuard guard(device);
  gpuStreamCaptureStatus status = gpuStreamCaptureStatusNone;
  ATTN_CUDA_CHECK(gpuStreamIsCapturing(stream, &status));
  if (status != gpuStreamCaptureStatusNone) {
    throw InvalidArgument("the current stream of device " + std::to_string(device) + " is already capturing",
                          "ATTN_GRAPH_NESTED");
  }
  const int pool = next_pool_++;
  auto& allocator = CachingAllocator::instance();
  allocator.begin_capture(device, stream, pool);
  const gpuError_t err = gpuStreamBeginCapture(stream, gpuStreamCaptureModeThreadLocal);
  if (err != gpuSuccess) {
    allocator.end_capture(device);
    allocator.release_pool(device, pool);
    ATTN_CUDA_CHECK(err);
  }
  captures_[device] = Capture{stream, pool};
}

std::uint64_t GraphRegistry::end(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = captures_.find(device);
  if (it == captures_.end())
    throw InvalidArgument("device " + std::to_string(device) + " is not capturing", "ATTN_BAD_HANDLE");
  const Capture capture = it->second;
  captures_.erase(it);
  auto& allocator = CachingAllocator::instance();
  DeviceGuard guard(device);
  gpuGraph_t graph = nullptr;
  gpuError_t err = gpuStreamEndCapture(capture.stream, &graph);
  allocator.end_capture(device);
  gpuGraphExec_t exec = nullptr;
  if (err == gpuSuccess) err = gpuGraphInstantiateWithFlags(&exec, graph, 0);
  if (err != gpuSuccess) {
    if (graph != nullptr) (void)gpuGraphDestroy(graph);
    // Nothing captured ever ran, so the pool's memory is free of device work.
    allocator.release_pool(device, capture.pool);
    ATTN_CUDA_CHECK(err);
  }
  const std::uint64_t id = next_id_++;
  graphs_[id] = Graph{device, graph, exec, capture.pool, {}};
  return id;
}

void GraphRegistry::abort(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = captures_.find(device);
  if (it == captures_.end()) return;
  const Capture capture = it->second;
  captures_.erase(it);
  DeviceGuard guard(device);
  gpuGraph_t graph = nullptr;
  if (gpuStreamEndCapture(capture.stream, &graph) != gpuSuccess) (void)gpuGetLastError();
  if (graph != nullptr) (void)gpuGraphDestroy(graph);
  auto& allocator = CachingAllocator::instance();
  allocator.end_capture(device);
  allocator.release_pool(device, capture.pool);
}

GraphRegistry::Graph& GraphRegistry::find_locked(std::uint64_t graph) {
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) throw InvalidArgument("unknown or already destroyed graph handle", "ATTN_BAD_HANDLE");
  return it->second;
}

void GraphRegistry::launch(std::uint64_t graph, gpuStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Graph& g = find_locked(graph);
  const int stream_device = StreamRegistry::instance().device_of(stream);
  if (stream_device != g.device) {
    throw InvalidArgument("the graph was captured on device " + std::to_string(g.device) +
                              "; replay it on a stream of that device, not of device " + std::to_string(stream_device),
                          "ATTN_GRAPH_DEVICE");
  }
  if (!captures_.empty()) {
    throw InvalidArgument(
        "a graph cannot be replayed while a capture is underway; replay it before or after the capture",
        "ATTN_GRAPH_CAPTURE_UNSUPPORTED");
  }
  DeviceGuard guard(g.device);
  ATTN_CUDA_CHECK(gpuGraphLaunch(g.exec, stream));
  if (std::find(g.launched_on.begin(), g.launched_on.end(), stream) == g.launched_on.end())
    g.launched_on.push_back(stream);
}

void GraphRegistry::destroy(std::uint64_t graph) {
  std::lock_guard<std::mutex> lock(mu_);
  Graph& g = find_locked(graph);
  if (captures_.count(g.device) != 0) {
    throw InvalidArgument("a graph of device " + std::to_string(g.device) +
                              " cannot be destroyed while that device captures "
                              "(it waits for the graph's work); dispose it after the capture",
                          "ATTN_GRAPH_CAPTURE_UNSUPPORTED");
  }
  DeviceGuard guard(g.device);
  auto& streams = StreamRegistry::instance();
  for (gpuStream_t s : g.launched_on) {
    // A destroyed stream was synchronized when it was destroyed; device_of throws for it.
    bool live = true;
    try {
      streams.device_of(s);
    } catch (const InvalidArgument&) {
      live = false;
    }
    if (live) ATTN_CUDA_CHECK(gpuStreamSynchronize(s));
  }
  ATTN_CUDA_CHECK(gpuGraphExecDestroy(g.exec));
  (void)gpuGraphDestroy(g.graph);
  const int device = g.device, pool = g.pool;
  graphs_.erase(graph);
  CachingAllocator::instance().release_pool(device, pool);
}

std::size_t GraphRegistry::node_count(std::uint64_t graph) {
  std::lock_guard<std::mutex> lock(mu_);
  Graph& g = find_locked(graph);
  DeviceGuard guard(g.device);
  std::size_t nodes = 0;
  ATTN_CUDA_CHECK(gpuGraphGetNodes(g.graph, nullptr, &nodes));
  return nodes;
}

int GraphRegistry::capturing_device() {
  std::lock_guard<std::mutex> lock(mu_);
  return captures_.empty() ? -1 : captures_.begin()->first;
}

}  // namespace attn
