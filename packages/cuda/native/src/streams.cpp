#include "streams.h"

#include "attn/cuda_check.h"
#include "caching_allocator.h"
#include "device_guard.h"
#include "devices.h"
#include "errors.h"

namespace attn {

StreamRegistry& StreamRegistry::instance() {
  // Never destroyed: at process exit the driver may already be gone, and the OS reclaims streams.
  static StreamRegistry* registry = new StreamRegistry();
  return *registry;
}

gpuStream_t StreamRegistry::create(int device) {
  check_device_index(device);
  DeviceGuard guard(device);
  gpuStream_t stream = nullptr;
  ATTN_CUDA_CHECK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
  std::lock_guard<std::mutex> lock(mu_);
  device_of_[stream] = device;
  return stream;
}

void StreamRegistry::destroy(gpuStream_t stream) {
  int device;
  gpuStream_t fallback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = device_of_.find(stream);
    if (it == device_of_.end()) throw InvalidArgument("unknown or already destroyed stream handle", "ATTN_BAD_HANDLE");
    device = it->second;
    fallback = default_stream_locked(device);
    if (stream == fallback) {
      throw InvalidArgument("a device's default stream cannot be destroyed", "ATTN_BAD_HANDLE");
    }
    if (CachingAllocator::instance().capturing(device)) {
      throw InvalidArgument("a stream cannot be destroyed while device " + std::to_string(device) +
                                " captures a graph (destroying waits for its work); dispose it after the capture",
                            "ATTN_GRAPH_CAPTURE_UNSUPPORTED");
    }
    device_of_.erase(it);
    if (current_[device] == stream) current_[device] = fallback;
  }
  DeviceGuard guard(device);
  // After the sync nothing queued on the stream touches its memory, so the default stream may own it.
  ATTN_CUDA_CHECK(gpuStreamSynchronize(stream));
  CachingAllocator::instance().retag_stream(device, stream, fallback);
  ATTN_CUDA_CHECK(gpuStreamDestroy(stream));
}

int StreamRegistry::device_of(gpuStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = device_of_.find(stream);
  if (it == device_of_.end()) throw InvalidArgument("unknown or already destroyed stream handle", "ATTN_BAD_HANDLE");
  return it->second;
}

gpuStream_t StreamRegistry::default_stream_locked(int device) {
  if (default_.empty()) {
    const int count = device_count();
    default_.assign(count, nullptr);
    current_.assign(count, nullptr);
  }
  if (default_[device] == nullptr) {
    DeviceGuard guard(device);
    gpuStream_t stream = nullptr;
    ATTN_CUDA_CHECK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
    default_[device] = stream;
    device_of_[stream] = device;
    if (current_[device] == nullptr) current_[device] = stream;
  }
  return default_[device];
}

gpuStream_t StreamRegistry::default_stream(int device) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(mu_);
  return default_stream_locked(device);
}

gpuStream_t StreamRegistry::current(int device) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(mu_);
  default_stream_locked(device);
  return current_[device];
}

void StreamRegistry::set_current(int device, gpuStream_t stream) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(mu_);
  gpuStream_t fallback = default_stream_locked(device);
  if (stream == nullptr) {
    current_[device] = fallback;
    return;
  }
  auto it = device_of_.find(stream);
  if (it == device_of_.end()) throw InvalidArgument("unknown or already destroyed stream handle", "ATTN_BAD_HANDLE");
  if (it->second != device) {
    throw InvalidArgument("the stream belongs to device " + std::to_string(it->second) + ", not device " +
                              std::to_string(device) + "; pass a stream made on that device",
                          "ATTN_DEVICE_MISMATCH");
  }
  current_[device] = stream;
}

void StreamRegistry::synchronize(gpuStream_t stream) {
  DeviceGuard guard(device_of(stream));
  ATTN_CUDA_CHECK(gpuStreamSynchronize(stream));
}

bool StreamRegistry::query(gpuStream_t stream) {
  DeviceGuard guard(device_of(stream));
  const gpuError_t err = gpuStreamQuery(stream);
  if (err == gpuErrorNotReady) {
    (void)gpuGetLastError();  // not-ready is an answer, not an error to leave behind
    return false;
  }
  ATTN_CUDA_CHECK(err);
  return true;
}

}  // namespace attn
