// Every binding runs its body through `guarded`, which turns the runtime's C++ exceptions into JS
// errors with a stable `code` (src/errors.ts maps them onto core's error classes). Nothing escapes as
// a C++ exception into Node, so nothing aborts the process.
#pragma once
#include <napi.h>

#include <exception>
#include <new>

#include "attn/cuda_check.h"
#include "errors.h"
#include "memory_stats.h"

namespace attn {

Napi::Object stats_to_js(Napi::Env env, const MemoryStats& s);

Napi::Error make_error(Napi::Env env, const char* code, const std::string& message);
Napi::Error make_gpu_error(Napi::Env env, const CudaError& e);
Napi::Error make_oom_error(Napi::Env env, const OutOfMemory& e);

template <typename Body>
Napi::Value guarded(const Napi::CallbackInfo& info, Body&& body) {
  Napi::Env env = info.Env();
  try {
    return body();
  } catch (const Napi::Error&) {
    throw;  // already a JS error (thrown by node-addon-api itself)
  } catch (const OutOfMemory& e) {
    throw make_oom_error(env, e);
  } catch (const CudaError& e) {
    throw make_gpu_error(env, e);
  } catch (const InvalidArgument& e) {
    throw make_error(env, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    throw make_error(env, "ATTN_HOST_OUT_OF_MEMORY", "host memory ran out inside the " ATTN_GPU_PLATFORM " runtime");
  } catch (const std::exception& e) {
    throw make_error(env, "ATTN_NATIVE_ERROR", e.what());
  }
}

}  // namespace attn
