// The N-API shim over AOTriton's v3 flash API. It only copies the plain objects that TS built
// (src/marshal/*.ts) into attn_fwd_params / attn_bwd_params and calls the entry point on the given
// stream. Every check happens in TS first; here a malformed object or a hipError becomes a JS error.
#include <aotriton/config.h>
#include <aotriton/flash.h>
#include <aotriton/util.h>
#include <hip/hip_runtime.h>
#include <napi.h>

#include <array>
#include <cstdint>
#include <string>

#include "lse_convert.h"

// config.h defines AOTRITON_GIT_SHA1 as a bare token (CMake's configure_file of an unquoted
// @AOTRITON_GIT_SHA1@), e.g. 972223c501ff..., not a string literal: stringify it.
#define ATTN_AOT_STR2(x) #x
#define ATTN_AOT_STR(x) ATTN_AOT_STR2(x)
// AOTriton 0.x.y is at least 0.<minor> (the version macros carry a 'u' suffix; fine in #if).
#define ATTN_AOT_AT_LEAST(minor) (AOTRITON_VERSION_MAJOR > 0 || AOTRITON_VERSION_MINOR >= (minor))

namespace {

namespace aot = AOTRITON_NS;
namespace flash = AOTRITON_NS::v3::flash;

[[noreturn]] void fail(Napi::Env env, const std::string& what) {
  throw Napi::Error::New(env, "attn aotriton: " + what);
}

Napi::Object field_object(Napi::Env env, const Napi::Object& o, const char* name) {
  Napi::Value v = o.Get(name);
  if (!v.IsObject()) fail(env, std::string("field ") + name + " must be an object");
  return v.As<Napi::Object>();
}

double number(Napi::Env env, const Napi::Object& o, const char* name) {
  Napi::Value v = o.Get(name);
  if (!v.IsNumber()) fail(env, std::string("field ") + name + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

uint64_t big(Napi::Env env, const Napi::Value& v, const char* name) {
  if (!v.IsBigInt()) fail(env, std::string(name) + " must be a bigint");
  bool lossless = false;
  uint64_t out = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) fail(env, std::string(name) + " does not fit in 64 bits");
  return out;
}

int32_t int32_field(Napi::Env env, const Napi::Object& o, const char* name) {
  return static_cast<int32_t>(number(env, o, name));
}

// A TensorViewArg { ptr, sizes, strides, dtype } of rank R.
template <int R>
aot::TensorView<R> tensor_view(Napi::Env env, const Napi::Object& parent, const char* name) {
  Napi::Object o = field_object(env, parent, name);
  Napi::Value sizes_v = o.Get("sizes");
  Napi::Value strides_v = o.Get("strides");
  if (!sizes_v.IsArray() || !strides_v.IsArray()) fail(env, std::string(name) + ".sizes/.strides must be arrays");
  Napi::Array sizes = sizes_v.As<Napi::Array>();
  Napi::Array strides = strides_v.As<Napi::Array>();
  if (sizes.Length() != R || strides.Length() != R)
    fail(env, std::string(name) + " must have rank " + std::to_string(R));
  std::array<uint64_t, R> sz{};
  std::array<uint64_t, R> st{};
  for (uint32_t i = 0; i < static_cast<uint32_t>(R); i++) {
    sz[i] = static_cast<uint64_t>(sizes.Get(i).As<Napi::Number>().Int64Value());
    st[i] = static_cast<uint64_t>(strides.Get(i).As<Napi::Number>().Int64Value());
  }
  const auto ptr = static_cast<intptr_t>(big(env, o.Get("ptr"), name));
  const auto dtype = static_cast<aot::DType>(int32_field(env, o, "dtype"));
  return aot::TensorView<R>(ptr, sz, st, dtype);
}

aot::TensorView<0> scalar_view(Napi::Env env, const Napi::Object& parent, const char* name) {
  Napi::Object o = field_object(env, parent, name);
  return aot::TensorView<0>(static_cast<intptr_t>(big(env, o.Get("ptr"), name)),
                            static_cast<aot::DType>(int32_field(env, o, "dtype")));
}

#if ATTN_AOT_AT_LEAST(11)
// A LazyTensor (0.11+) over a buffer TS already allocated (and TS frees it), so AOTriton never calls
// back for memory. 0.12 changed the callbacks to take the LazyTensor itself (acquire(LazyTensor*))
// and added `eager`, a ready TensorView used instead of acquire(): set that. 0.11 has only
// acquire(void* cookie): hand the view back through the cookie.
template <int R>
struct Eager {
  aot::TensorView<R> view;
#if ATTN_AOT_AT_LEAST(12)
  aot::LazyTensor<R> lazy() {
    aot::LazyTensor<R> t;
    t.eager = view;
    return t;
  }
#else
  static aot::TensorView<R> acquire(void* cookie) { return static_cast<Eager*>(cookie)->view; }
  static void dispose(void*) {}
  aot::LazyTensor<R> lazy() {
    aot::LazyTensor<R> t;
    t.cookie = this;
    t.acquire = &Eager::acquire;
    t.dispose = &Eager::dispose;
    return t;
  }
#endif
};
#endif

hipStream_t stream_of(Napi::Env env, const Napi::Value& v) {
  return reinterpret_cast<hipStream_t>(big(env, v, "stream"));
}

void check(Napi::Env env, hipError_t err, const char* what) {
  if (err != hipSuccess)
    fail(env, std::string(what) + " failed: " + hipGetErrorName(err) + " (" + hipGetErrorString(err) + ")");
}

flash::attn_options options(bool deterministic) {
  flash::attn_options o;
#if ATTN_AOT_AT_LEAST(12)
  o.deterministic = deterministic;
#else
  (void)deterministic;  // TS declines deterministic backward before 0.12 (aotritonDeterministic)
#endif
  return o;
}

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("major", Napi::Number::New(env, AOTRITON_VERSION_MAJOR));
  o.Set("minor", Napi::Number::New(env, AOTRITON_VERSION_MINOR));
  o.Set("patch", Napi::Number::New(env, AOTRITON_VERSION_PATCH));
  o.Set("gitSha", Napi::String::New(env, ATTN_AOT_STR(AOTRITON_GIT_SHA1)));
  o.Set("fwdParamsVersion", Napi::Number::New(env, flash::attn_fwd_params::kVersion));
  o.Set("bwdParamsVersion", Napi::Number::New(env, flash::attn_bwd_params::kVersion));
  o.Set("archs", Napi::String::New(env, ATTN_ROCM_ARCHS_STRING));
  return o;
}

Napi::Value CheckGpu(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env, static_cast<int>(aot::v2::flash::check_gpu(stream_of(env, info[0]))));
}

Napi::Value Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) fail(env, "forward(args, stream, deterministic): args must be an object");
  Napi::Object a = info[0].As<Napi::Object>();
  flash::attn_fwd_params p;
  p.Q = tensor_view<4>(env, a, "Q");
  p.K = tensor_view<4>(env, a, "K");
  p.V = tensor_view<4>(env, a, "V");
  p.B = tensor_view<4>(env, a, "B");
  p.A = tensor_view<2>(env, a, "A");
  p.Sm_scale = static_cast<float>(number(env, a, "Sm_scale"));
  p.L = tensor_view<2>(env, a, "L");
  p.Out = tensor_view<4>(env, a, "Out");
  p.cu_seqlens_q = tensor_view<1>(env, a, "cu_seqlens_q");
  p.cu_seqlens_k = tensor_view<1>(env, a, "cu_seqlens_k");
  p.Max_seqlen_q = int32_field(env, a, "Max_seqlen_q");
  p.Max_seqlen_k = int32_field(env, a, "Max_seqlen_k");
  p.dropout_p = static_cast<float>(number(env, a, "dropout_p"));
  p.philox_seed_ptr = scalar_view(env, a, "philox_seed_ptr");
  p.philox_offset1 = scalar_view(env, a, "philox_offset1");
  p.philox_offset2 = big(env, a.Get("philox_offset2"), "philox_offset2");
  p.philox_seed_output = scalar_view(env, a, "philox_seed_output");
  p.philox_offset_output = scalar_view(env, a, "philox_offset_output");
  p.encoded_softmax = tensor_view<4>(env, a, "encoded_softmax");
  p.persistent_atomic_counter = scalar_view(env, a, "persistent_atomic_counter");
  p.causal_type = static_cast<int8_t>(int32_field(env, a, "causal_type"));
  p.varlen_type = static_cast<int8_t>(int32_field(env, a, "varlen_type"));
  p.window_left = int32_field(env, a, "window_left");
  p.window_right = int32_field(env, a, "window_right");
  const flash::attn_options opts = options(info[2].ToBoolean());
  check(env, flash::attn_fwd(p, flash::attn_fwd_params::kVersion, stream_of(env, info[1]), &opts),
        "aotriton::v3::flash::attn_fwd");
  return env.Undefined();
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) fail(env, "backward(args, stream, deterministic): args must be an object");
  Napi::Object a = info[0].As<Napi::Object>();
#if ATTN_AOT_AT_LEAST(11)
  Eager<2> delta{tensor_view<2>(env, a, "D")};
  Eager<4> dq_acc{tensor_view<4>(env, a, "DQ_ACC")};
#endif
  flash::attn_bwd_params p;
  p.Q = tensor_view<4>(env, a, "Q");
  p.K = tensor_view<4>(env, a, "K");
  p.V = tensor_view<4>(env, a, "V");
  p.B = tensor_view<4>(env, a, "B");
  p.Sm_scale = static_cast<float>(number(env, a, "Sm_scale"));
  p.Out = tensor_view<4>(env, a, "Out");
  p.DO = tensor_view<4>(env, a, "DO");
  p.DK = tensor_view<4>(env, a, "DK");
  p.DV = tensor_view<4>(env, a, "DV");
  p.DQ = tensor_view<4>(env, a, "DQ");
  p.DB = tensor_view<4>(env, a, "DB");
  p.L = tensor_view<2>(env, a, "L");
#if ATTN_AOT_AT_LEAST(11)
  p.D = delta.lazy();
#else
  p.D = tensor_view<2>(env, a, "D");  // 0.10: a plain T2; dq is written by the dq kernel, no DQ_ACC
#endif
  p.cu_seqlens_q = tensor_view<1>(env, a, "cu_seqlens_q");
  p.cu_seqlens_k = tensor_view<1>(env, a, "cu_seqlens_k");
  p.Max_seqlen_q = int32_field(env, a, "Max_seqlen_q");
  p.Max_seqlen_k = int32_field(env, a, "Max_seqlen_k");
  p.dropout_p = static_cast<float>(number(env, a, "dropout_p"));
  p.philox_seed_ptr = scalar_view(env, a, "philox_seed_ptr");
  p.philox_offset1 = scalar_view(env, a, "philox_offset1");
  p.philox_offset2 = big(env, a.Get("philox_offset2"), "philox_offset2");
  p.causal_type = static_cast<int8_t>(int32_field(env, a, "causal_type"));
  p.varlen_type = static_cast<int8_t>(int32_field(env, a, "varlen_type"));
  p.window_left = int32_field(env, a, "window_left");
  p.window_right = int32_field(env, a, "window_right");
#if ATTN_AOT_AT_LEAST(11)
  p.DQ_ACC = dq_acc.lazy();
#endif
  const flash::attn_options opts = options(info[2].ToBoolean());
  check(env, flash::attn_bwd(p, flash::attn_bwd_params::kVersion, stream_of(env, info[1]), &opts),
        "aotriton::v3::flash::attn_bwd");
  return env.Undefined();
}

Napi::Value ConvertLse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) fail(env, "convertLse(args, stream): args must be an object");
  Napi::Object a = info[0].As<Napi::Object>();
  attn_aot::LseConvert c;
  const std::string direction = a.Get("direction").ToString().Utf8Value();
  if (direction != "toAttn" && direction != "toAotriton") fail(env, "direction must be 'toAttn' or 'toAotriton'");
  c.to_attn = direction == "toAttn";
  c.aot = reinterpret_cast<float*>(big(env, a.Get("aot"), "aot"));
  c.attn = reinterpret_cast<float*>(big(env, a.Get("attn"), "attn"));
  c.heads_q = int32_field(env, a, "headsQ");
  c.sequences = int32_field(env, a, "sequences");
  c.max_seqlen_q = int32_field(env, a, "maxSeqlenQ");
  c.total_q = static_cast<int64_t>(number(env, a, "totalQ"));
  c.cu_seqlens_q = reinterpret_cast<const int32_t*>(big(env, a.Get("cuSeqlensQ"), "cuSeqlensQ"));
  c.fully_masked_below = static_cast<float>(number(env, a, "fullyMaskedBelow"));
  if (c.aot == nullptr || c.attn == nullptr) fail(env, "convertLse: null buffer");
  check(env, attn_aot::launch_lse_convert(c, stream_of(env, info[1])), "lse_convert kernel launch");
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("checkGpu", Napi::Function::New(env, CheckGpu, "checkGpu"));
  exports.Set("forward", Napi::Function::New(env, Forward, "forward"));
  exports.Set("backward", Napi::Function::New(env, Backward, "backward"));
  exports.Set("convertLse", Napi::Function::New(env, ConvertLse, "convertLse"));
  return exports;
}

}  // namespace

NODE_API_MODULE(attn_aotriton, Init)
