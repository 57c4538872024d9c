// What the CK shim's translation units share: errors, reading the plain objects TS built, and the
// optional-field setters. CK's fmha_fwd.hpp and fmha_bwd.hpp cannot share a translation unit (both
// define FmhaMasks, at every CK revision checked), so forward and backward live in ck_fwd.cpp and
// ck_bwd.cpp (as PyTorch's mha_fwd_ck.hip / mha_bwd_ck.hip), and ck_shim.cpp holds the module.
#pragma once
#include <hip/hip_runtime.h>
#include <napi.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace attn_ck {

[[noreturn]] inline void fail(Napi::Env env, const std::string& what) {
  throw Napi::Error::New(env, "attn ck: " + what);
}

struct Reader {
  Napi::Env env;
  Napi::Object o;
  double num(const char* k) const {
    Napi::Value v = o.Get(k);
    if (!v.IsNumber()) fail(env, std::string("field ") + k + " must be a number");
    return v.As<Napi::Number>().DoubleValue();
  }
  int32_t idx(const char* k) const { return static_cast<int32_t>(num(k)); }  // ck_tile::index_t
  bool flag(const char* k) const { return o.Get(k).ToBoolean(); }
  std::string str(const char* k) const { return o.Get(k).ToString().Utf8Value(); }
  void* ptr(const char* k) const {
    Napi::Value v = o.Get(k);
    if (!v.IsBigInt()) fail(env, std::string("field ") + k + " must be a bigint");
    bool lossless = false;
    const uint64_t p = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) fail(env, std::string("field ") + k + " does not fit in 64 bits");
    return reinterpret_cast<void*>(p);
  }
};

inline Reader reader(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsObject()) fail(info.Env(), "argument " + std::to_string(i) + " must be an object");
  return Reader{info.Env(), info[i].As<Napi::Object>()};
}

inline hipStream_t stream_arg(const Napi::CallbackInfo& info, size_t i) {
  bool lossless = false;
  if (!info[i].IsBigInt()) fail(info.Env(), "stream must be a bigint");
  return reinterpret_cast<hipStream_t>(info[i].As<Napi::BigInt>().Uint64Value(&lossless));
}

// set_<name>(obj, value): assigns obj.name when the struct has that member, returns whether it did.
#define ATTN_CK_OPTIONAL_FIELD(name)                                                        \
  template <class T, class = void>                                                          \
  struct has_##name : std::false_type {};                                                   \
  template <class T>                                                                        \
  struct has_##name<T, std::void_t<decltype(std::declval<T&>().name)>> : std::true_type {}; \
  template <class T, class V>                                                               \
  bool set_##name(T& obj, V value) {                                                        \
    if constexpr (has_##name<T>::value) {                                                   \
      obj.name = static_cast<std::remove_reference_t<decltype(obj.name)>>(value);           \
      return true;                                                                          \
    } else {                                                                                \
      (void)obj;                                                                            \
      (void)value;                                                                          \
      return false;                                                                         \
    }                                                                                       \
  }

// forward(traits, args, stream) -> fmha_fwd's result (< 0: no compiled instance). ck_fwd.cpp.
Napi::Value Forward(const Napi::CallbackInfo& info);
// backward(traits, args, stream) -> fmha_bwd's result. ck_bwd.cpp.
Napi::Value Backward(const Napi::CallbackInfo& info);
// Whether this CK's fmha_bwd_args is the dq_acc layout the binding marshals. ck_bwd.cpp.
bool BwdDqAccLayout();

}  // namespace attn_ck
