// hello.philox(seedLo, seedHi, counter) -> the first word of attn's Philox4x32-10 block: proves the
// shared header (attn/philox.h from @attn/native) is on the include path of a source build.
#include <napi.h>

#include "attn/philox.h"

static Napi::Value Philox(const Napi::CallbackInfo& info) {
  const uint32_t lo = info[0].As<Napi::Number>().Uint32Value();
  const uint32_t hi = info[1].As<Napi::Number>().Uint32Value();
  const uint32_t c = info[2].As<Napi::Number>().Uint32Value();
  const attn::Philox4 r = attn::philox4x32_10({c, 0, 0, 0}, lo, hi);
  return Napi::Number::New(info.Env(), r.x);
}

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("philox", Napi::Function::New(env, Philox));
  return exports;
}

NODE_API_MODULE(hello, Init)
