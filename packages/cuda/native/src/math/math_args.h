// cuda-math's JS argument object (src/math-backend/launch-args.ts) into Params / BwdParams. Every
// size is checked against the limits, every tensor's shape and dtype against the call, and every
// tensor's byte range against the caching allocator's live blocks, so no argument can make a kernel
// read or write outside a buffer. Errors are InvalidArgument (ATTN_BAD_ARGUMENT, ATTN_OUT_OF_BOUNDS)
// naming the field.
#pragma once
#include <napi.h>

#include <cstdint>
#include <vector>

#include "attn/tensor_ref.h"
#include "math_params.h"

namespace attn::math {

// What a launch needs besides the kernel parameters.
struct CallInfo {
  int device = 0;
  DType dtype = DType::kFloat32;
  // Accumulate in float64: float64 inputs, or a scale or softcap that overflows float32.
  bool acc64 = false;
  // Host copies of the varlen offsets, the per-sequence key counts and the block table (empty when absent), checked
  // here; the binding uploads them, so the kernels never read offsets nobody checked.
  std::vector<int32_t> cu_q, cu_k, seqused_k, block_table, key_start;
};

CallInfo read_forward(const Napi::Object& args, Params& p);
CallInfo read_backward(const Napi::Object& args, BwdParams& p);

}  // namespace attn::math
