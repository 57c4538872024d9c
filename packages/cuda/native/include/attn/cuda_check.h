// Error checks for CUDA calls and launches. Errors become C++ exceptions that the N-API layer turns
// into JS errors naming the call or kernel; nothing aborts the process.
#pragma once
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

namespace attn {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }
 private:
  cudaError_t code_;
};

inline void cuda_check(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) {
    throw CudaError(err, std::string(what) + " failed: " + cudaGetErrorName(err) + " (" +
                             cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line));
  }
}

}  // namespace attn

#define ATTN_CUDA_CHECK(expr) ::attn::cuda_check((expr), #expr, __FILE__, __LINE__)
// After every launch: a launch-configuration error or a sticky error from an earlier kernel.
#define ATTN_LAUNCH_CHECK(kernel_name) ::attn::cuda_check(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
