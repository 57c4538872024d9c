// Streams the runtime created, by device, and each device's current stream: the one copies, memsets
// and kernel addons (through currentStream()) enqueue on. Handles from JS are looked up here before
// use, so a stale or made-up handle is an error, not a crash.
#pragma once
#include <mutex>
#include <unordered_map>
#include <vector>

#include "attn/gpu_api.h"

namespace attn {

class StreamRegistry {
 public:
  static StreamRegistry& instance();

  // A non-blocking stream (no implicit sync with the legacy default stream).
  gpuStream_t create(int device);
  // Waits for the stream's work, hands its cached memory to the device's default stream, destroys it.
  // A device's default stream lives as long as the process.
  void destroy(gpuStream_t stream);
  // The device of a stream this registry knows; throws InvalidArgument for any other handle.
  int device_of(gpuStream_t stream);
  // The device's current stream; its default stream unless set_current chose another.
  gpuStream_t current(int device);
  // nullptr restores the default stream.
  void set_current(int device, gpuStream_t stream);
  gpuStream_t default_stream(int device);
  void synchronize(gpuStream_t stream);
  // True when all work enqueued so far has finished.
  bool query(gpuStream_t stream);

 private:
  gpuStream_t default_stream_locked(int device);
  std::mutex mu_;
  std::unordered_map<gpuStream_t, int> device_of_;
  std::vector<gpuStream_t> default_;
  std::vector<gpuStream_t> current_;
};

}  // namespace attn
