// Stream capture and replay: a device's current stream records its work into a graph, instantiated
// once and launched many times. Capture uses the thread-local mode, so a capture-unsafe runtime call
// from this thread (a synchronizing copy, a device sync) fails instead of silently corrupting the
// capture; the runtime's own copies and syncs check first and throw ATTN_GRAPH_CAPTURE_UNSUPPORTED
// with what to do. Memory: each graph has a private pool in the caching allocator
// (caching_allocator.h), released when the graph is destroyed. Graphs cross into JS as integer ids,
// checked against this registry.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "attn/gpu_api.h"

namespace attn {

// Throws InvalidArgument ATTN_GRAPH_CAPTURE_UNSUPPORTED when `stream` is capturing: `what` cannot be
// recorded into a graph (it reads or waits on the host).
void throw_if_capturing(gpuStream_t stream, const char* what, const char* instead);

// Throws ATTN_GRAPH_CAPTURE_UNSUPPORTED while any capture is underway: `what` waits on the host.
void refuse_during_capture(const char* what, const char* instead);

class GraphRegistry {
 public:
  static GraphRegistry& instance();

  // Starts capturing the device's current stream. One capture at a time per process: a second one,
  // or a stream already capturing, is ATTN_GRAPH_NESTED.
  void begin(int device);
  // Ends the device's capture and instantiates the graph; returns its id. When the capture was
  // invalidated or instantiation fails, the capture is over all the same (stream usable, pool
  // released) and the runtime's error is thrown.
  std::uint64_t end(int device);
  // Ends a capture whose function failed: whatever was captured is discarded and the stream is
  // usable again. Never throws for the capture's own state (the function's error is the one to report).
  void abort(int device);
  // Queues the graph's work on `stream` (a stream of the graph's device).
  void launch(std::uint64_t graph, gpuStream_t stream);
  // Waits for the graph's launches, destroys it and releases its memory pool.
  void destroy(std::uint64_t graph);
  // Nodes (kernels, copies, memsets) the capture recorded.
  std::size_t node_count(std::uint64_t graph);
  // The device whose current stream is capturing, or -1.
  int capturing_device();

 private:
  struct Capture {
    gpuStream_t stream;
    int pool;
  };
  struct Graph {
    int device;
    gpuGraph_t graph;  // what was captured, kept for node_count; the exec is what launches
    gpuGraphExec_t exec;
    int pool;
    std::vector<gpuStream_t> launched_on;
  };
  Graph& find_locked(std::uint64_t graph);

  std::mutex mu_;
  std::unordered_map<int, Capture> captures_;  // by device; at most one entry
  std::unordered_map<std::uint64_t, Graph> graphs_;
  std::uint64_t next_id_ = 1;
  int next_pool_ = 1;
};

}  // namespace attn
