// The kv-cache append and rotary kernel (attn/kv_append.cuh) as flash-cuda's addon calls it.
#pragma once
#include <cstdint>

namespace attn::flash {

// Queues the kernel on the stream ptrs[kv::kStream] names; the arrays as @attn/cuda's kvAppendArgs packs them.
void kv_append(const uint64_t* ptrs, const double* nums, int device);

}  // namespace attn::flash
