// @attn/cuda's instance of the shared kv-cache append and rotary kernel (attn/kv_append.cuh), for
// cuda-math; flash-cuda compiles the same header into its own addon.
#include "attn/kv_append.cuh"

#include "attn/cuda_check.h"
#include "errors.h"
#include "math_kernels.h"

namespace attn::math {

void run_kv_append(const uint64_t* ptrs, const double* nums) {
  kv::Params p;
  try {
    p = kv::params_from_arrays(ptrs, nums);
  } catch (const std::invalid_argument& e) {
    throw InvalidArgument(std::string("cuda-math: ") + e.what(), "ATTN_BAD_ARGUMENT");
  }
  kv::launch(p, reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(ptrs[kv::kStream])));
  ATTN_LAUNCH_CHECK("cuda-math kv append_kernel");
}

}  // namespace attn::math
