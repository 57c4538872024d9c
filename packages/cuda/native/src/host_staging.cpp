#include "host_staging.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "attn/cuda_check.h"
#include "device_guard.h"

namespace attn {

HostStaging& HostStaging::instance() {
  static HostStaging* staging = new HostStaging();  // see CachingAllocator::instance
  return *staging;
}

bool HostStaging::idle_locked(const Buffer& b) {
  if (b.held) return false;
  if (b.event == nullptr) return true;
  const gpuError_t err = gpuEventQuery(b.event);
  if (err == gpuErrorNotReady) {
    (void)gpuGetLastError();
    return false;
  }
  ATTN_CUDA_CHECK(err);
  return true;
}

static void* pin(std::size_t size) {
  void* ptr = nullptr;
  const gpuError_t err = gpuHostAlloc(&ptr, size, gpuHostAllocDefault);
  if (err == gpuErrorMemoryAllocation) {
    (void)gpuGetLastError();
    return nullptr;
  }
  ATTN_CUDA_CHECK(err);
  return ptr;
}

HostStaging::Buffer* HostStaging::acquire_locked(std::size_t bytes) {
  Buffer* chosen = nullptr;
  for (auto& b : buffers_) {
    if (!b->transient && b->size >= bytes && (chosen == nullptr || b->size < chosen->size) && idle_locked(*b)) {
      chosen = b.get();
    }
  }
  if (chosen != nullptr) return chosen;
  std::size_t size = kMinStagingBufferBytes;
  while (size < bytes) size <<= 1;
  if (pinned_ + size > kMaxPinnedBytes) return nullptr;
  void* ptr = pin(size);
  if (ptr == nullptr) return nullptr;
  auto b = std::make_unique<Buffer>();
  b->ptr = ptr;
  b->size = size;
  buffers_.push_back(std::move(b));
  pinned_ += size;
  return buffers_.back().get();
}

void HostStaging::prepare_event_locked(Buffer& b, int device) {
  if (b.event != nullptr && b.event_device != device) {
    DeviceGuard old_device(b.event_device);  // events are tied to the device they were made on
    ATTN_CUDA_CHECK(gpuEventDestroy(b.event));
    b.event = nullptr;
  }
  if (b.event == nullptr) {
    DeviceGuard guard(device);
    ATTN_CUDA_CHECK(gpuEventCreateWithFlags(&b.event, gpuEventDisableTiming));
    b.event_device = device;
  }
}

bool HostStaging::copy_to_device(int device, void* dst, const void* src, std::size_t bytes, gpuStream_t stream) {
  if (bytes > kMaxStagedCopyBytes) return false;
  std::lock_guard<std::mutex> lock(mu_);
  Buffer* b = acquire_locked(bytes);
  if (b == nullptr) return false;
  prepare_event_locked(*b, device);
  DeviceGuard guard(device);
  std::memcpy(b->ptr, src, bytes);
  ATTN_CUDA_CHECK(gpuMemcpyAsync(dst, b->ptr, bytes, gpuMemcpyHostToDevice, stream));
  ATTN_CUDA_CHECK(gpuEventRecord(b->event, stream));
  return true;
}

HostStaging::Buffer* HostStaging::begin_read(int device, const void* src, std::size_t bytes, gpuStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Buffer* b = bytes <= kMaxStagedCopyBytes ? acquire_locked(bytes) : nullptr;
  if (b == nullptr) {
    // Too large for the pool, or the pool is full: a one-off buffer of exactly this size.
    void* ptr = pin(bytes);
    if (ptr == nullptr) throw std::bad_alloc();
    auto owned = std::make_unique<Buffer>();
    owned->ptr = ptr;
    owned->size = bytes;
    owned->transient = true;
    buffers_.push_back(std::move(owned));
    pinned_ += bytes;
    b = buffers_.back().get();
  }
  b->held = true;
  try {
    prepare_event_locked(*b, device);
    DeviceGuard guard(device);
    ATTN_CUDA_CHECK(gpuMemcpyAsync(b->ptr, src, bytes, gpuMemcpyDeviceToHost, stream));
    ATTN_CUDA_CHECK(gpuEventRecord(b->event, stream));
  } catch (...) {
    b->held = false;
    throw;
  }
  return b;
}

void HostStaging::free_buffer_locked(Buffer& b) {
  if (b.event != nullptr) {
    DeviceGuard guard(b.event_device);
    ATTN_CUDA_CHECK(gpuEventDestroy(b.event));
    b.event = nullptr;
  }
  ATTN_CUDA_CHECK(gpuFreeHost(b.ptr));
  pinned_ -= b.size;
}

void HostStaging::release_read(Buffer* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  buffer->held = false;
  if (!buffer->transient) return;
  auto it = std::find_if(buffers_.begin(), buffers_.end(), [&](const auto& b) { return b.get() == buffer; });
  if (it == buffers_.end()) return;
  // The read completed before release, so nothing on the device still uses it.
  free_buffer_locked(**it);
  buffers_.erase(it);
}

std::size_t HostStaging::pinned_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return pinned_;
}

void HostStaging::release_idle() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = buffers_.begin(); it != buffers_.end();) {
    if (!idle_locked(**it)) {
      ++it;
      continue;
    }
    free_buffer_locked(**it);
    it = buffers_.erase(it);
  }
}

}  // namespace attn
