// A scoped block from the caching allocator, for the runtime's own temporaries (test kernels).
#pragma once
#include <cstddef>

#include "caching_allocator.h"

namespace attn {

class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t bytes, gpuStream_t stream)
      : device_(device), ptr_(CachingAllocator::instance().allocate(device, bytes, stream)) {}
  ~DeviceBuffer() {
    try {
      CachingAllocator::instance().free(device_, ptr_);
    } catch (...) {
      // Only a pointer this object allocated is freed here, so free cannot reject it; never throw
      // from a destructor during unwinding.
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  int device_;
  void* ptr_;
};

}  // namespace attn
