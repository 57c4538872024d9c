// buildInfo(): how the addon was compiled, for `attn doctor`.
#include "attn/gpu_api.h"
#include "bindings.h"
#include "build_config.h"
#include "napi_errors.h"

namespace attn {
namespace {

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("platform", Napi::String::New(env, ATTN_GPU_PLATFORM));
    o.Set("archs", Napi::String::New(env, ATTN_BUILD_ARCHS));
    o.Set("compiler", Napi::String::New(env, ATTN_BUILD_COMPILER));
    o.Set("compilerVersion", Napi::String::New(env, ATTN_BUILD_COMPILER_VERSION));
    o.Set("buildType", Napi::String::New(env, ATTN_BUILD_TYPE));
    o.Set("flags", Napi::String::New(env, ATTN_BUILD_FLAGS));
    // The runtime headers compiled against (CUDART_VERSION / HIP_VERSION), e.g. 13000.
    o.Set("runtimeHeadersVersion", Napi::Number::New(env, ATTN_GPU_RUNTIME_VERSION));
    o.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
    return o;
  });
}

}  // namespace

void bind_build_info(Napi::Env env, Napi::Object exports) {
  exports.Set("buildInfo", Napi::Function::New(env, BuildInfo, "buildInfo"));
}

}  // namespace attn
