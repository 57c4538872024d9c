// The backward's N-API functions (addon_bwd.h). Argument arrays are checked for type and length (an
// abi mismatch between src/bwd-abi.ts and bwd_abi.h throws, never reads out of bounds).
#include "addon_bwd.h"

#include <exception>
#include <stdexcept>
#include <string>

#include "abi.h"
#include "addon_args.h"
#include "attn/cuda_check.h"
#include "bwd_abi.h"
#include "bwd_dispatch.h"

namespace attn::flash {
namespace {

Napi::Value BackwardPlan(const Napi::CallbackInfo& info) {
  const double* nums = f64_arg(info, 0, abi::kNumCount, "arguments");
  const double* bnums = f64_arg(info, 1, abi::kBwdNumCount, "backward arguments");
  return with_js_errors(info.Env(), [&]() -> Napi::Value {
    const BwdPlan p = backward_plan(nums, bnums);
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("kernel", backward_kernel_names()[p.config]);
    o.Set("dqAccumStride", p.dq_accum_stride);
    o.Set("dqTurnRows", p.dq_turn_rows);
    o.Set("stages", p.stages);
    o.Set("nBlocks", p.n_blocks);
    o.Set("mBlocks", p.m_blocks);
    return o;
  });
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  const uint64_t* ptrs = u64_arg(info, 0, abi::kPtrCount, "addresses");
  const double* nums = f64_arg(info, 1, abi::kNumCount, "arguments");
  const uint64_t* bptrs = u64_arg(info, 2, abi::kBwdPtrCount, "backward addresses");
  const double* bnums = f64_arg(info, 3, abi::kBwdNumCount, "backward arguments");
  with_js_errors(info.Env(), [&] { backward(ptrs, nums, bptrs, bnums); });
  return info.Env().Undefined();
}

Napi::Value BackwardKernels(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto names = backward_kernel_descriptions();
  Napi::Array out = Napi::Array::New(env, names.size());
  for (size_t i = 0; i < names.size(); ++i) out.Set(static_cast<uint32_t>(i), names[i]);
  return out;
}

}  // namespace

void register_backward(Napi::Env env, Napi::Object exports) {
  exports.Set("backwardPlan", Napi::Function::New(env, BackwardPlan, "backwardPlan"));
  exports.Set("backward", Napi::Function::New(env, Backward, "backward"));
  exports.Set("backwardKernels", Napi::Function::New(env, BackwardKernels, "backwardKernels"));
  exports.Set("bwdPtrCount", Napi::Number::New(env, abi::kBwdPtrCount));
  exports.Set("bwdNumCount", Napi::Number::New(env, abi::kBwdNumCount));
}

}  // namespace attn::flash
