// N-API surface of cutlass_memeff.node: argument objects from src/launch-args.ts become FwdParams /
// BwdParams; every C++ exception becomes a JS Error (code ATTN_MEMEFF_ARGS or ATTN_CUDA_ERROR).
#include <napi.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "attn/cuda_check.h"
#include "attn/napi_args.h"
#include "dispatch.h"

namespace {

using memeff::BwdParams;
using memeff::FwdParams;

// Fields of the argument object, read with the shared readers (attn/napi_args.h): a missing or
// mistyped field is attn::InvalidArgument, which `guarded` reports as ATTN_MEMEFF_ARGS.
using attn::prop;
using attn::prop_int;
using attn::prop_ints;
using attn::prop_number;
using attn::prop_object;
using attn::prop_u64;

// {ptr: bigint, strides: [b, h, s]}
template <typename Ptr>
void get_tensor(const Napi::Object& o, const char* key, Ptr& ptr, int64_t (&strides)[3]) {
  Napi::Object t = prop_object(o, key);
  ptr = reinterpret_cast<Ptr>(static_cast<uintptr_t>(prop_u64(t, "ptr")));
  prop_ints(t, "strides", strides);
}

void parse_fwd(const Napi::Object& a, FwdParams& p) {
  get_tensor(a, "q", p.q, p.q_stride);
  get_tensor(a, "k", p.k, p.k_stride);
  get_tensor(a, "v", p.v, p.v_stride);
  get_tensor(a, "out", p.o, p.o_stride);
  p.lse = reinterpret_cast<float*>(static_cast<uintptr_t>(prop_u64(a, "lse")));
  p.batch = static_cast<int32_t>(prop_int(a, "batch"));
  p.heads_q = static_cast<int32_t>(prop_int(a, "headsQ"));
  p.heads_kv = static_cast<int32_t>(prop_int(a, "headsKV"));
  p.group = p.heads_kv > 0 ? p.heads_q / p.heads_kv : 1;
  p.seq_q = static_cast<int32_t>(prop_int(a, "seqQ"));
  p.seq_k = static_cast<int32_t>(prop_int(a, "seqK"));
  p.head_dim = static_cast<int32_t>(prop_int(a, "headDim"));
  p.head_dim_v = static_cast<int32_t>(prop_int(a, "headDimV"));
  const double scale = prop_number(a, "scale");
  p.scale = static_cast<float>(scale);
  // Causal and the window ([left, right], -1 unbounded: core's kernelWindow) as the bounds around the diagonal.
  const bool causal = prop(a, "causal").ToBoolean().Value();
  p.lower_right = prop(a, "lowerRight").ToBoolean().Value();
  int64_t window[2];
  prop_ints(a, "window", window);
  if (window[0] < -1 || window[1] < -1) throw std::invalid_argument("memeff-cuda: window sides must be >= -1");
  p.has_right = causal || window[1] >= 0;
  p.window_right = causal ? 0 : window[1];  // causal with a right side: min(right, 0) = 0
  p.has_left = window[0] >= 0;
  p.window_left = window[0] >= 0 ? window[0] : 0;
  const double softcap = prop_number(a, "softcap");
  if (!(softcap >= 0)) throw std::invalid_argument("memeff-cuda: 'softcap' must be >= 0");
  p.softcap = static_cast<float>(softcap);
  p.softcap_in = softcap > 0 ? static_cast<float>(scale / softcap) : 0.f;
  Napi::Value alibi = a.Get("alibi");
  if (alibi.IsObject()) {
    Napi::Object s = alibi.As<Napi::Object>();
    p.alibi = reinterpret_cast<const float*>(static_cast<uintptr_t>(prop_u64(s, "ptr")));
    prop_ints(s, "strides", p.alibi_stride);
  }
  Napi::Value varlen = a.Get("varlen");
  if (varlen.IsObject()) {
    Napi::Object v = varlen.As<Napi::Object>();
    p.cu_seqlens_q = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(prop_u64(v, "cuSeqlensQ")));
    p.cu_seqlens_k = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(prop_u64(v, "cuSeqlensK")));
    p.total_q = static_cast<int32_t>(prop_int(v, "totalQ"));
    p.total_k = static_cast<int32_t>(prop_int(v, "totalK"));
  }
  Napi::Value used = a.Get("sequsedK");
  if (used.IsBigInt()) p.seqused_k = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(prop_u64(a, "sequsedK")));
  p.seq_k_rows = p.seq_k;
  memeff::set_bounds(p);
  // logsumexp (and the backward's D and dQ rows): dense [B, Hq, Sq], varlen [Hq, totalQ].
  p.lse_stride[0] = p.cu_seqlens_q != nullptr ? 0 : static_cast<int64_t>(p.heads_q) * p.seq_q;
  p.lse_stride[1] = p.cu_seqlens_q != nullptr ? p.total_q : p.seq_q;
  Napi::Value mask = a.Get("mask");
  if (mask.IsObject()) {
    Napi::Object m = mask.As<Napi::Object>();
    const int64_t kind = prop_int(m, "kind");
    if (kind != 1 && kind != 2)
      throw std::invalid_argument("memeff-cuda: mask 'kind' must be 1 (additive) or 2 (bool)");
    p.mask_kind = static_cast<memeff::MaskKind>(kind);
    p.mask_dtype = static_cast<int32_t>(prop_int(m, "dtype"));
    p.mask = reinterpret_cast<const void*>(static_cast<uintptr_t>(prop_u64(m, "ptr")));
    prop_ints(m, "strides", p.mask_stride);
  }
  Napi::Value drop = a.Get("dropout");
  if (drop.IsObject()) {
    Napi::Object d = drop.As<Napi::Object>();
    p.dropout = true;
    const int64_t thr = prop_int(d, "threshold");
    if (thr < 0 || thr > 0xffffffffLL) throw std::invalid_argument("memeff-cuda: dropout threshold must be a uint32");
    p.dropout_threshold = static_cast<uint32_t>(thr);
    p.dropout_seed = prop_u64(d, "seed");
    p.dropout_offset = static_cast<uint32_t>(prop_int(d, "offset"));
    p.dropout_keep_scale = static_cast<float>(prop_number(d, "keepScale"));
  }
  p.features = memeff::needs_features(p);
}

cudaStream_t get_stream(const Napi::Object& a) {
  return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(prop_u64(a, "stream")));
}

template <typename Fn>
Napi::Value guarded(const Napi::CallbackInfo& info, Fn&& fn) {
  Napi::Env env = info.Env();
  try {
    if (info.Length() < 1 || !info[0].IsObject())
      throw std::invalid_argument("memeff-cuda: expected one argument object");
    return fn(env, info[0].As<Napi::Object>());
  } catch (const Napi::Error&) {
    throw;
  } catch (const attn::InvalidArgument& e) {
    Napi::Error err = Napi::Error::New(env, std::string("memeff-cuda: ") + e.what());
    err.Set("code", Napi::String::New(env, "ATTN_MEMEFF_ARGS"));
    throw err;
  } catch (const std::invalid_argument& e) {
    Napi::Error err = Napi::Error::New(env, e.what());
    err.Set("code", Napi::String::New(env, "ATTN_MEMEFF_ARGS"));
    throw err;
  } catch (const std::exception& e) {
    Napi::Error err = Napi::Error::New(env, e.what());
    err.Set("code", Napi::String::New(env, "ATTN_CUDA_ERROR"));
    throw err;
  }
}

memeff::PathRequest get_path(const Napi::Object& a) {
  Napi::Value v = a.Get("path");
  if (!v.IsString()) return memeff::PathRequest::kAuto;
  const std::string s = v.As<Napi::String>().Utf8Value();
  if (s == "simt") return memeff::PathRequest::kSimt;
  if (s == "mma") return memeff::PathRequest::kMma;
  if (s == "auto") return memeff::PathRequest::kAuto;
  throw std::invalid_argument("memeff-cuda: 'path' must be auto, simt or mma");
}

Napi::Value Forward(const Napi::CallbackInfo& info) {
  return guarded(info, [](Napi::Env env, const Napi::Object& a) -> Napi::Value {
    FwdParams p;
    parse_fwd(a, p);
    const std::string kernel = memeff::run_forward(p, static_cast<int>(prop_int(a, "dtype")),
                                                   static_cast<int>(prop_int(a, "device")), get_stream(a), get_path(a));
    return Napi::String::New(env, kernel);
  });
}

void parse_bwd(const Napi::Object& a, BwdParams& p) {
  parse_fwd(a, p);
  get_tensor(a, "dout", p.dout, p.do_stride);
  get_tensor(a, "dq", p.dq, p.dq_stride);
  get_tensor(a, "dk", p.dk, p.dk_stride);
  get_tensor(a, "dv", p.dv, p.dv_stride);
  Napi::Value db = a.Get("dbias");
  if (db.IsObject()) {
    Napi::Object d = db.As<Napi::Object>();
    p.dbias = reinterpret_cast<void*>(static_cast<uintptr_t>(prop_u64(d, "ptr")));
    prop_ints(d, "strides", p.dbias_stride);
    int64_t sizes[4];
    prop_ints(d, "sizes", sizes);
    for (int i = 0; i < 4; ++i) p.dbias_size[i] = static_cast<int32_t>(sizes[i]);
  }
  p.deterministic = prop(a, "deterministic").ToBoolean().Value();
  // The query splits' dK / dV partials: rows as the keys, dense [B, Hk, Sk], varlen [Hk, totalK].
  const bool varlen = p.cu_seqlens_k != nullptr;
  p.kv_accum_stride[0] = varlen ? 0 : static_cast<int64_t>(p.heads_kv) * p.seq_k;
  p.kv_accum_stride[1] = varlen ? p.total_k : p.seq_k;
  p.kv_accum_rows = static_cast<int64_t>(p.heads_kv) * (varlen ? p.total_k : static_cast<int64_t>(p.batch) * p.seq_k);
}

Napi::Value BackwardPlan(const Napi::CallbackInfo& info) {
  return guarded(info, [](Napi::Env env, const Napi::Object& a) -> Napi::Value {
    BwdParams p;
    parse_bwd(a, p);
    const memeff::BwdPlan plan = memeff::plan_backward(p, static_cast<int>(prop_int(a, "dtype")),
                                                       static_cast<int>(prop_int(a, "device")), get_path(a));
    Napi::Object out = Napi::Object::New(env);
    out.Set("workspaceBytes", Napi::Number::New(env, static_cast<double>(plan.workspace_bytes)));
    out.Set("querySplits", Napi::Number::New(env, plan.query_splits));
    out.Set("tensorCores", Napi::Boolean::New(env, plan.mma || plan.tf32));
    out.Set("dbiasReduced", Napi::Boolean::New(env, plan.dbias_reduced));
    out.Set("dbiasAtomic", Napi::Boolean::New(env, plan.dbias_atomic));
    out.Set("dbiasMode", Napi::String::New(env, plan.dbias_mode));
    return out;
  });
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  return guarded(info, [](Napi::Env env, const Napi::Object& a) -> Napi::Value {
    BwdParams p;
    parse_bwd(a, p);
    Napi::Object ws = prop_object(a, "workspace");
    void* ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(prop_u64(ws, "ptr")));
    const size_t bytes = static_cast<size_t>(prop_int(ws, "bytes"));
    const auto ran =
        memeff::run_backward(p, static_cast<int>(prop_int(a, "dtype")), static_cast<int>(prop_int(a, "device")),
                             get_path(a), ptr, bytes, get_stream(a));
    Napi::Array names = Napi::Array::New(env, ran.size());
    for (size_t i = 0; i < ran.size(); ++i) names.Set(static_cast<uint32_t>(i), Napi::String::New(env, ran[i]));
    return names;
  });
}

Napi::Value DeviceSupport(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (info.Length() < 1 || !info[0].IsNumber()) throw std::invalid_argument("memeff-cuda: expected a device index");
    return Napi::String::New(env, memeff::device_support(info[0].As<Napi::Number>().Int32Value()));
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("forward", Napi::Function::New(env, Forward, "forward"));
  exports.Set("backwardPlan", Napi::Function::New(env, BackwardPlan, "backwardPlan"));
  exports.Set("backward", Napi::Function::New(env, Backward, "backward"));
  exports.Set("deviceSupport", Napi::Function::New(env, DeviceSupport, "deviceSupport"));
  Napi::Array names = Napi::Array::New(env);
  const auto all = memeff::kernel_names();
  for (size_t i = 0; i < all.size(); ++i) names.Set(static_cast<uint32_t>(i), Napi::String::New(env, all[i]));
  exports.Set("kernels", names);
  exports.Set("archs", Napi::String::New(env, ATTN_CUDA_ARCHS_STRING));
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  exports.Set("cudaRuntimeVersion", Napi::Number::New(env, runtime));
  return exports;
}

}  // namespace

NODE_API_MODULE(cutlass_memeff, Init)
