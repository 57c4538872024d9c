// N-API surface of flash_cuda.node: plan(nums), useAllocator(address), forward(ptrs, nums), buildInfo() (the
// backward's functions are registered by addon_bwd.cpp). Every C++ exception (bad argument, CUDA error naming
// the kernel) becomes a JS Error; nothing aborts the process.
#include <napi.h>

#include <exception>
#include <string>

#include "abi.h"
#include "addon_args.h"
#include "addon_bwd.h"
#include "attn/cuda_check.h"
#include "attn/kv_append_abi.h"
#include "dispatch.h"
#include "fwd_outputs.h"
#include "kv_append.h"

namespace {

using attn::flash::f64_arg;
using attn::flash::u64_arg;
using attn::flash::with_js_errors;
using attn::flash::abi::kNumCount;
using attn::flash::abi::kPtrCount;

Napi::Value Plan(const Napi::CallbackInfo& info) {
  const double* nums = f64_arg(info, 0, kNumCount, "arguments");
  // Optional: the address array (whether ALiBi slopes are given decides if a lean kernel may run).
  const uint64_t* ptrs =
      info.Length() > 1 && !info[1].IsUndefined() ? u64_arg(info, 1, kPtrCount, "addresses") : nullptr;
  return with_js_errors(info.Env(), [&]() -> Napi::Value {
    const attn::flash::Plan p = attn::flash::plan(nums, ptrs);
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("numSplits", p.num_splits);
    o.Set("oaccumStride", p.oaccum_stride);
    o.Set("packGqa", p.pack_gqa);
    o.Set("mBlocks", p.m_blocks);
    o.Set("kernel", attn::flash::kernel_name(p.config));
    o.Set("fusedKvAppend", p.fuse_kv_append);
    o.Set("clusterSplits", p.cluster_splits);
    return o;
  });
}

// useAllocator(address): @attn/cuda's allocatorApi(), the table forward() allocates from.
Napi::Value UseAllocator(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsBigInt())
    throw Napi::TypeError::New(info.Env(), "useAllocator: argument 1 must be the allocator table's address (a bigint)");
  bool lossless = false;
  const uint64_t address = info[0].As<Napi::BigInt>().Uint64Value(&lossless);
  with_js_errors(info.Env(), [&] { attn::flash::use_allocator(address); });
  return info.Env().Undefined();
}

// forward(ptrs, nums): true once launched. With nums[kAllocate] set it first allocates what the bits ask
// for and writes their addresses (and the stream) into ptrs; false (nothing launched, nothing held) when an
// allocation could not be had, for the caller to allocate through @attn/cuda's API, whose errors say why.
Napi::Value Forward(const Napi::CallbackInfo& info) {
  uint64_t* ptrs = const_cast<uint64_t*>(u64_arg(info, 0, kPtrCount, "addresses"));
  const double* nums = f64_arg(info, 1, kNumCount, "arguments");
  const bool launched = with_js_errors(info.Env(), [&] { return attn::flash::forward_with_outputs(ptrs, nums); });
  return Napi::Boolean::New(info.Env(), launched);
}

// kvAppend(ptrs, nums, device): the shared kv-cache append and rotary kernel (attn/kv_append.cuh).
Napi::Value KvAppend(const Napi::CallbackInfo& info) {
  const uint64_t* ptrs = u64_arg(info, 0, attn::kv::kPtrCount, "kv addresses");
  const double* nums = f64_arg(info, 1, attn::kv::kNumCount, "kv arguments");
  if (info.Length() < 3 || !info[2].IsNumber())
    throw Napi::TypeError::New(info.Env(), "kvAppend: argument 3 must be the device index");
  const int device = info[2].As<Napi::Number>().Int32Value();
  with_js_errors(info.Env(), [&] { attn::flash::kv_append(ptrs, nums, device); });
  return info.Env().Undefined();
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("cudaArchs", ATTN_CUDA_ARCHS_STRING);
  o.Set("cudaRuntime", CUDART_VERSION);
  const auto names = attn::flash::kernel_descriptions();
  Napi::Array kernels = Napi::Array::New(env, names.size());
  for (size_t i = 0; i < names.size(); ++i) kernels.Set(static_cast<uint32_t>(i), names[i]);
  o.Set("kernels", kernels);
  const auto plain = attn::flash::kernel_names();
  Napi::Array kernel_names = Napi::Array::New(env, plain.size());
  for (size_t i = 0; i < plain.size(); ++i) kernel_names.Set(static_cast<uint32_t>(i), plain[i]);
  o.Set("kernelNames", kernel_names);
  o.Set("ptrCount", static_cast<int>(kPtrCount));
  o.Set("numCount", static_cast<int>(kNumCount));
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("plan", Napi::Function::New(env, Plan, "plan"));
  exports.Set("useAllocator", Napi::Function::New(env, UseAllocator, "useAllocator"));
  exports.Set("forward", Napi::Function::New(env, Forward, "forward"));
  exports.Set("kvAppend", Napi::Function::New(env, KvAppend, "kvAppend"));
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo, "buildInfo"));
  attn::flash::register_backward(env, exports);  // backwardPlan, backward (addon_bwd.cpp)
  return exports;
}

}  // namespace

NODE_API_MODULE(flash_cuda, Init)
