// Makes a device current for one scope and restores the previous one. The runtime's calls take an
// explicit device index, and the caller's current device (kernel addons may rely on it) must survive.
#pragma once
#include "attn/cuda_check.h"

namespace attn {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    int current = 0;
    ATTN_CUDA_CHECK(gpuGetDevice(&current));
    if (current != device) {
      ATTN_CUDA_CHECK(gpuSetDevice(device));
      previous_ = current;
    }
  }
  ~DeviceGuard() {
    if (previous_ >= 0) (void)gpuSetDevice(previous_);  // destructors must not throw
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace attn
