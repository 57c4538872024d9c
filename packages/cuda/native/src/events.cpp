#include "events.h"

#include "attn/cuda_check.h"
#include "device_guard.h"
#include "devices.h"
#include "errors.h"
#include "streams.h"

namespace attn {

EventRegistry& EventRegistry::instance() {
  static EventRegistry* registry = new EventRegistry();  // see StreamRegistry::instance
  return *registry;
}

EventRegistry::Entry EventRegistry::lookup(gpuEvent_t event) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event);
  if (it == events_.end()) throw InvalidArgument("unknown or already destroyed event handle", "ATTN_BAD_HANDLE");
  return it->second;
}

int EventRegistry::device_of(gpuEvent_t event) { return lookup(event).device; }

gpuEvent_t EventRegistry::create(int device, bool timing) {
  check_device_index(device);
  DeviceGuard guard(device);
  gpuEvent_t event = nullptr;
  ATTN_CUDA_CHECK(gpuEventCreateWithFlags(&event, timing ? gpuEventDefault : gpuEventDisableTiming));
  std::lock_guard<std::mutex> lock(mu_);
  events_[event] = Entry{device, timing, false};
  return event;
}

void EventRegistry::destroy(gpuEvent_t event) {
  int device;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(event);
    if (it == events_.end()) throw InvalidArgument("unknown or already destroyed event handle", "ATTN_BAD_HANDLE");
    device = it->second.device;
    events_.erase(it);
  }
  DeviceGuard guard(device);
  // Safe while recorded work is still running: the runtime releases the event once it completes.
  ATTN_CUDA_CHECK(gpuEventDestroy(event));
}

void EventRegistry::record(gpuEvent_t event, gpuStream_t stream) {
  const Entry entry = lookup(event);
  const int stream_device = StreamRegistry::instance().device_of(stream);
  if (stream_device != entry.device) {
    throw InvalidArgument("the event belongs to device " + std::to_string(entry.device) + " but the stream to device " +
                              std::to_string(stream_device) + "; record an event on a stream of its own device",
                          "ATTN_DEVICE_MISMATCH");
  }
  DeviceGuard guard(entry.device);
  ATTN_CUDA_CHECK(gpuEventRecord(event, stream));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event);
  if (it != events_.end()) it->second.recorded = true;
}

void EventRegistry::synchronize(gpuEvent_t event) {
  const Entry entry = lookup(event);
  DeviceGuard guard(entry.device);
  ATTN_CUDA_CHECK(gpuEventSynchronize(event));
}

bool EventRegistry::query(gpuEvent_t event) {
  const Entry entry = lookup(event);
  DeviceGuard guard(entry.device);
  const gpuError_t err = gpuEventQuery(event);
  if (err == gpuErrorNotReady) {
    (void)gpuGetLastError();
    return false;
  }
  ATTN_CUDA_CHECK(err);
  return true;
}

float EventRegistry::elapsed_ms(gpuEvent_t start, gpuEvent_t end) {
  const Entry a = lookup(start);
  const Entry b = lookup(end);
  if (!a.timing || !b.timing) {
    throw InvalidArgument("elapsedMs needs two events created with timing enabled (new Event({ timing: true }))",
                          "ATTN_EVENT_NO_TIMING");
  }
  if (!a.recorded || !b.recorded) {
    throw InvalidArgument("elapsedMs needs both events recorded first (event.record(stream))",
                          "ATTN_EVENT_NOT_RECORDED");
  }
  if (a.device != b.device) {
    throw InvalidArgument("elapsedMs needs two events of the same device", "ATTN_DEVICE_MISMATCH");
  }
  DeviceGuard guard(a.device);
  // The runtime answers "not ready" until both have completed; timing is for after the fact.
  ATTN_CUDA_CHECK(gpuEventSynchronize(start));
  ATTN_CUDA_CHECK(gpuEventSynchronize(end));
  float ms = 0.0f;
  ATTN_CUDA_CHECK(gpuEventElapsedTime(&ms, start, end));
  return ms;
}

void EventRegistry::stream_wait(gpuStream_t stream, gpuEvent_t event) {
  const Entry entry = lookup(event);
  if (!entry.recorded) {
    throw InvalidArgument("waiting on an event that was never recorded; record it first", "ATTN_EVENT_NOT_RECORDED");
  }
  DeviceGuard guard(StreamRegistry::instance().device_of(stream));
  ATTN_CUDA_CHECK(gpuStreamWaitEvent(stream, event, 0));
}

}  // namespace attn
