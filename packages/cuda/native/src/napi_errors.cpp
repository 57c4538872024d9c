#include "napi_errors.h"

#include "host_staging.h"

namespace attn {

Napi::Object stats_to_js(Napi::Env env, const MemoryStats& s) {
  Napi::Object o = Napi::Object::New(env);
  auto num = [&](const char* key, double v) { o.Set(key, Napi::Number::New(env, v)); };
  num("allocatedBytes", static_cast<double>(s.allocated_bytes));
  num("requestedBytes", static_cast<double>(s.requested_bytes));
  num("reservedBytes", static_cast<double>(s.reserved_bytes));
  num("peakAllocatedBytes", static_cast<double>(s.peak_allocated_bytes));
  num("peakReservedBytes", static_cast<double>(s.peak_reserved_bytes));
  num("activeBlocks", static_cast<double>(s.active_blocks));
  num("cachedBlocks", static_cast<double>(s.cached_blocks));
  num("pendingFreeBlocks", static_cast<double>(s.pending_free_blocks));
  num("allocRequests", static_cast<double>(s.alloc_requests));
  num("freeRequests", static_cast<double>(s.free_requests));
  num("cacheHits", static_cast<double>(s.cache_hits));
  num("deviceMallocs", static_cast<double>(s.device_mallocs));
  num("deviceFrees", static_cast<double>(s.device_frees));
  num("cacheFlushes", static_cast<double>(s.cache_flushes));
  num("ooms", static_cast<double>(s.ooms));
  num("pinnedHostBytes", static_cast<double>(HostStaging::instance().pinned_bytes()));
  return o;
}

Napi::Error make_error(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

Napi::Error make_gpu_error(Napi::Env env, const CudaError& e) {
  Napi::Error err = make_error(env, "ATTN_GPU_ERROR", e.what());
  err.Set("gpuError", Napi::String::New(env, gpuGetErrorName(e.code())));
  err.Set("gpuErrorNumber", Napi::Number::New(env, static_cast<double>(e.code())));
  err.Set("platform", Napi::String::New(env, ATTN_GPU_PLATFORM));
  return err;
}

Napi::Error make_oom_error(Napi::Env env, const OutOfMemory& e) {
  Napi::Error err = make_error(env, "ATTN_OUT_OF_MEMORY", e.what());
  err.Set("device", Napi::Number::New(env, e.device));
  err.Set("requestedBytes", Napi::Number::New(env, static_cast<double>(e.requested)));
  err.Set("deviceFreeBytes", Napi::Number::New(env, static_cast<double>(e.device_free)));
  err.Set("deviceTotalBytes", Napi::Number::New(env, static_cast<double>(e.device_total)));
  err.Set("stats", stats_to_js(env, e.stats));
  return err;
}

}  // namespace attn
