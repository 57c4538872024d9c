// Pinned host buffers that make copies between JS memory and the device asynchronous.
// - Host to device: a copy from a JS typed array (pageable memory the garbage collector may release
//   as soon as the call returns) is first copied into a pinned buffer, then DMA'd on the stream; the
//   buffer is reused once an event recorded after the copy has completed. Copies larger than
//   kMaxStagedCopyBytes, or that would push the pool past kMaxPinnedBytes, are not staged: the
//   caller copies synchronously instead (same result, no overlap), so pinning never grows unbounded.
// - Device to host (async reads): the device DMA's into a pinned buffer held for the read; the host
//   copies it into the JS array once the event completes, then releases it. A read larger than the
//   pool allows gets a one-off pinned buffer, freed on release.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "attn/gpu_api.h"

namespace attn {

constexpr std::size_t kMaxStagedCopyBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxPinnedBytes = std::size_t{256} << 20;
constexpr std::size_t kMinStagingBufferBytes = std::size_t{1} << 20;

class HostStaging {
 public:
  struct Buffer {
    void* ptr = nullptr;
    std::size_t size = 0;
    gpuEvent_t event = nullptr;  // recorded after the last copy through the buffer
    int event_device = -1;
    bool held = false;       // reserved by an async read until release_read
    bool transient = false;  // outside the pool: freed on release
  };

  static HostStaging& instance();
  // Enqueues the copy through a pinned buffer and returns true; false when the copy is not staged
  // (see above) and nothing was enqueued.
  bool copy_to_device(int device, void* dst, const void* src, std::size_t bytes, gpuStream_t stream);
  // Enqueues device -> pinned on the stream and records the buffer's event. The buffer stays held
  // (never reused) until release_read. Throws std::bad_alloc when no pinned memory can be had.
  Buffer* begin_read(int device, const void* src, std::size_t bytes, gpuStream_t stream);
  void release_read(Buffer* buffer);
  std::size_t pinned_bytes();
  // Frees the pinned pool buffers no copy is using.
  void release_idle();

 private:
  bool idle_locked(const Buffer& b);
  // An idle pooled buffer of at least `bytes`, or a new one; nullptr when the pool may not grow.
  Buffer* acquire_locked(std::size_t bytes);
  void prepare_event_locked(Buffer& b, int device);
  void free_buffer_locked(Buffer& b);
  std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // unique_ptr: held buffers keep their address
  std::size_t pinned_ = 0;
};

}  // namespace attn
