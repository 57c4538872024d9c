// Error checks for CUDA calls and launches. Errors become C++ exceptions that the N-API layer turns
// into JS errors naming the call or kernel; nothing aborts the process.
// Written against gpu_api.h, so the same checks compile for ROCm with hipcc (-DATTN_HIP): there
// gpuError_t is hipError_t and CudaError carries a HIP error code.
#pragma once
#include <stdexcept>
#include <string>

#include "attn/gpu_api.h"

namespace attn {

class CudaError : public std::runtime_error {
 public:
  CudaError(gpuError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  gpuError_t code() const { return code_; }

 private:
  gpuError_t code_;
};

inline void cuda_check(gpuError_t err, const char* what, const char* file, int line) {
  if (err != gpuSuccess) {
    throw CudaError(err, std::string(what) + " failed: " + gpuGetErrorName(err) + " (" + gpuGetErrorString(err) +
                             ") at " + file + ":" + std::to_string(line));
  }
}

}  // namespace attn

#define ATTN_CUDA_CHECK(expr) ::attn::cuda_check((expr), #expr, __FILE__, __LINE__)
// After every launch: a launch-configuration error or a sticky error from an earlier kernel.
#define ATTN_LAUNCH_CHECK(kernel_name) \
  ::attn::cuda_check(gpuGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
