// flash-cuda's instance of the shared kv-cache append and rotary kernel (@attn/cuda's
// attn/kv_append.cuh; cuda-math compiles the same header into @attn/cuda's addon).
#include "attn/kv_append.cuh"

#include "attn/cuda_check.h"
#include "kv_append.h"

namespace attn::flash {

void kv_append(const uint64_t* ptrs, const double* nums, int device) {
  const kv::Params p = kv::params_from_arrays(ptrs, nums);  // std::invalid_argument: ATTN_FLASH_ARGUMENT
  ATTN_CUDA_CHECK(cudaSetDevice(device));
  kv::launch(p, reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(ptrs[kv::kStream])));
  ATTN_LAUNCH_CHECK("flash-cuda kv append_kernel");
}

}  // namespace attn::flash
