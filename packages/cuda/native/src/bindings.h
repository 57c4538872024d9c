// Each bind_*.cpp adds one group of functions to the addon's exports.
#pragma once
#include <napi.h>

namespace attn {

void bind_devices(Napi::Env env, Napi::Object exports);
void bind_memory(Napi::Env env, Napi::Object exports);
void bind_async_read(Napi::Env env, Napi::Object exports);
void bind_streams(Napi::Env env, Napi::Object exports);
void bind_graphs(Napi::Env env, Napi::Object exports);
void bind_testing(Napi::Env env, Napi::Object exports);
void bind_build_info(Napi::Env env, Napi::Object exports);
// native/src/math/: built into @attn/cuda's addon only (ATTN_CUDA_MATH), not into @attn/rocm's.
void bind_math(Napi::Env env, Napi::Object exports);

}  // namespace attn
