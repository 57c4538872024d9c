// Events the runtime created. Handles from JS are looked up here first; an event must be recorded
// before it is waited on or timed, and on a stream of its own device.
#pragma once
#include <mutex>
#include <unordered_map>

#include "attn/gpu_api.h"

namespace attn {

class EventRegistry {
 public:
  static EventRegistry& instance();

  // timing = false makes a lighter event that cannot be used with elapsed_ms.
  gpuEvent_t create(int device, bool timing);
  void destroy(gpuEvent_t event);
  void record(gpuEvent_t event, gpuStream_t stream);
  void synchronize(gpuEvent_t event);
  // True when the work captured by the last record has finished.
  bool query(gpuEvent_t event);
  // Milliseconds between two recorded timing events of one device; waits for both to complete.
  float elapsed_ms(gpuEvent_t start, gpuEvent_t end);
  // Later work on `stream` waits for the event (across devices too).
  void stream_wait(gpuStream_t stream, gpuEvent_t event);
  int device_of(gpuEvent_t event);

 private:
  struct Entry {
    int device;
    bool timing;
    bool recorded;
  };
  Entry lookup(gpuEvent_t event);
  std::mutex mu_;
  std::unordered_map<gpuEvent_t, Entry> events_;
};

}  // namespace attn
