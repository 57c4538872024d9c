// N-API surface of the backward, registered by addon.cpp's Init: backwardPlan(nums, bnums),
// backward(ptrs, nums, bptrs, bnums), backwardKernels(). Errors become JS Errors with a code.
#pragma once
#include <napi.h>

namespace attn::flash {

void register_backward(Napi::Env env, Napi::Object exports);

}  // namespace attn::flash
