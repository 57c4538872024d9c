// Module entry of the device runtime addon (attn_cuda.node; attn_rocm.node when built with hipcc).
// Loading it touches no device: the first call that needs one initializes the runtime, so a machine
// without a driver can still load it and ask probe() why there is no device.
#include <napi.h>

#include "bindings.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  attn::bind_devices(env, exports);
  attn::bind_memory(env, exports);
  attn::bind_async_read(env, exports);
  attn::bind_streams(env, exports);
  attn::bind_graphs(env, exports);
  attn::bind_testing(env, exports);
  attn::bind_build_info(env, exports);
#ifdef ATTN_CUDA_MATH
  attn::bind_math(env, exports);  // the cuda-math backend's kernels: attn_cuda.node only
#endif
  return exports;
}

}  // namespace

NODE_API_MODULE(attn_gpu_runtime, Init)
