// The N-API shim over CK tile's fmha (example/ck_tile/01_fmha: fmha_fwd.hpp, fmha_bwd.hpp). It copies
// the plain traits/args objects built in src/marshal/*.ts into CK's structs, by field name, and calls
// fmha_fwd / fmha_bwd on the given stream. Their result (< 0: no compiled instance) goes back to TS.
// Field names follow the 2024 CK layout (rocm-backends.md §2.2-2.4); a CK revision that renames or
// adds fields needs this file changed, which is why the fields are set by name, never positionally.
#include <hip/hip_runtime.h>
#include <napi.h>

#include <string>
#include <utility>

#include "fmha_bwd.hpp"
#include "fmha_fwd.hpp"

namespace {

[[noreturn]] void fail(Napi::Env env, const std::string& what) { throw Napi::Error::New(env, "attn ck: " + what); }

struct Reader {
  Napi::Env env;
  Napi::Object o;
  double num(const char* k) const {
    Napi::Value v = o.Get(k);
    if (!v.IsNumber()) fail(env, std::string("field ") + k + " must be a number");
    return v.As<Napi::Number>().DoubleValue();
  }
  ck_tile::index_t idx(const char* k) const { return static_cast<ck_tile::index_t>(num(k)); }
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

Reader reader(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsObject()) fail(info.Env(), "argument " + std::to_string(i) + " must be an object");
  return Reader{info.Env(), info[i].As<Napi::Object>()};
}

ck_tile::stream_config stream_of(const Napi::CallbackInfo& info, size_t i) {
  bool lossless = false;
  if (!info[i].IsBigInt()) fail(info.Env(), "stream must be a bigint");
  ck_tile::stream_config s{};
  s.stream_id_ = reinterpret_cast<hipStream_t>(info[i].As<Napi::BigInt>().Uint64Value(&lossless));
  return s;
}

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("archs", ATTN_ROCM_ARCHS_STRING);
  o.Set("ckCommit", ATTN_CK_FMHA_DIR);
  return o;
}

Napi::Value Forward(const Napi::CallbackInfo& info) {
  const Reader t = reader(info, 0);
  const Reader a = reader(info, 1);
  fmha_fwd_traits traits{};
  traits.hdim_q = t.idx("hdim_q");
  traits.hdim_v = t.idx("hdim_v");
  traits.data_type = t.str("data_type");
  traits.is_group_mode = t.flag("is_group_mode");
  traits.is_v_rowmajor = t.flag("is_v_rowmajor");
  traits.mask_type = static_cast<mask_enum>(t.idx("mask_type"));
  traits.bias_type = static_cast<bias_enum>(t.idx("bias_type"));
  traits.has_lse = t.flag("has_lse");
  traits.has_dropout = t.flag("has_dropout");
  traits.do_fp8_static_quant = t.flag("do_fp8_static_quant");

  fmha_fwd_args args{};
  args.q_ptr = a.ptr("q_ptr");
  args.k_ptr = a.ptr("k_ptr");
  args.v_ptr = a.ptr("v_ptr");
  args.bias_ptr = a.ptr("bias_ptr");
  args.rand_val_ptr = nullptr;
  args.lse_ptr = a.ptr("lse_ptr");
  args.o_ptr = a.ptr("o_ptr");
  args.seqstart_q_ptr = a.ptr("seqstart_q_ptr");
  args.seqstart_k_ptr = a.ptr("seqstart_k_ptr");
  args.seqlen_k_ptr = nullptr;
  args.seqlen_q = a.idx("seqlen_q");
  args.seqlen_k = a.idx("seqlen_k");
  args.batch = a.idx("batch");
  args.max_seqlen_q = a.idx("max_seqlen_q");
  args.hdim_q = a.idx("hdim_q");
  args.hdim_v = a.idx("hdim_v");
  args.nhead_q = a.idx("nhead_q");
  args.nhead_k = a.idx("nhead_k");
  args.scale_s = static_cast<float>(a.num("scale_s"));
  args.scale_p = 1.f;
  args.scale_o = 1.f;
  args.stride_q = a.idx("stride_q");
  args.stride_k = a.idx("stride_k");
  args.stride_v = a.idx("stride_v");
  args.stride_bias = a.idx("stride_bias");
  args.stride_randval = 0;
  args.stride_o = a.idx("stride_o");
  args.nhead_stride_q = a.idx("nhead_stride_q");
  args.nhead_stride_k = a.idx("nhead_stride_k");
  args.nhead_stride_v = a.idx("nhead_stride_v");
  args.nhead_stride_bias = a.idx("nhead_stride_bias");
  args.nhead_stride_randval = 0;
  args.nhead_stride_lse = a.idx("nhead_stride_lse");
  args.nhead_stride_o = a.idx("nhead_stride_o");
  args.batch_stride_q = a.idx("batch_stride_q");
  args.batch_stride_k = a.idx("batch_stride_k");
  args.batch_stride_v = a.idx("batch_stride_v");
  args.batch_stride_bias = a.idx("batch_stride_bias");
  args.batch_stride_randval = 0;
  args.batch_stride_lse = a.idx("batch_stride_lse");
  args.batch_stride_o = a.idx("batch_stride_o");
  args.window_size_left = a.idx("window_size_left");
  args.window_size_right = a.idx("window_size_right");
  args.mask_type = a.idx("mask_type");
  args.p_drop = static_cast<float>(a.num("p_drop"));
  args.s_randval = false;
  // Dropout is declined in TS (ckNoDropout); seed/offset stay zero.
  args.drop_seed_offset = std::make_pair(uint64_t{0}, uint64_t{0});
  const float r = fmha_fwd(traits, args, stream_of(info, 2));
  return Napi::Number::New(info.Env(), r);
}

Napi::Value Backward(const Napi::CallbackInfo& info) {
  const Reader t = reader(info, 0);
  const Reader a = reader(info, 1);
  fmha_bwd_traits traits{};
  traits.hdim_q = t.idx("hdim_q");
  traits.hdim_v = t.idx("hdim_v");
  traits.data_type = t.str("data_type");
  traits.is_group_mode = t.flag("is_group_mode");
  traits.mask_type = static_cast<mask_enum>(t.idx("mask_type"));
  traits.bias_type = static_cast<bias_enum>(t.idx("bias_type"));
  traits.has_dbias = t.flag("has_dbias");
  traits.has_dropout = t.flag("has_dropout");
  traits.is_store_randval = t.flag("is_store_randval");
  traits.is_deterministic = t.flag("is_deterministic");

  fmha_bwd_args args{};
#define ATTN_PTR(f) args.f = a.ptr(#f)
#define ATTN_IDX(f) args.f = a.idx(#f)
  ATTN_PTR(q_ptr); ATTN_PTR(k_ptr); ATTN_PTR(v_ptr); ATTN_PTR(bias_ptr); ATTN_PTR(o_ptr); ATTN_PTR(lse_ptr);
  ATTN_PTR(do_ptr); ATTN_PTR(d_ptr); ATTN_PTR(dq_ptr); ATTN_PTR(dk_ptr); ATTN_PTR(dv_ptr); ATTN_PTR(dbias_ptr);
  ATTN_PTR(dq_acc_ptr); ATTN_PTR(seqstart_q_ptr); ATTN_PTR(seqstart_k_ptr);
  args.rand_val_ptr = nullptr;
  args.seqlen_k_ptr = nullptr;
  ATTN_IDX(seqlen_q); ATTN_IDX(seqlen_k); ATTN_IDX(batch); ATTN_IDX(max_seqlen_q); ATTN_IDX(max_seqlen_k);
  ATTN_IDX(hdim_q); ATTN_IDX(hdim_v); ATTN_IDX(nhead_q); ATTN_IDX(nhead_k);
  args.scale = static_cast<float>(a.num("scale"));
  ATTN_IDX(stride_q); ATTN_IDX(stride_k); ATTN_IDX(stride_v); ATTN_IDX(stride_bias); ATTN_IDX(stride_o);
  ATTN_IDX(stride_do); ATTN_IDX(stride_dq_acc); ATTN_IDX(stride_dq); ATTN_IDX(stride_dk); ATTN_IDX(stride_dv);
  ATTN_IDX(stride_dbias);
  ATTN_IDX(nhead_stride_q); ATTN_IDX(nhead_stride_k); ATTN_IDX(nhead_stride_v); ATTN_IDX(nhead_stride_bias);
  ATTN_IDX(nhead_stride_o); ATTN_IDX(nhead_stride_do); ATTN_IDX(nhead_stride_lsed); ATTN_IDX(nhead_stride_dq_acc);
  ATTN_IDX(nhead_stride_dq); ATTN_IDX(nhead_stride_dk); ATTN_IDX(nhead_stride_dv); ATTN_IDX(nhead_stride_dbias);
  ATTN_IDX(batch_stride_q); ATTN_IDX(batch_stride_k); ATTN_IDX(batch_stride_v); ATTN_IDX(batch_stride_bias);
  ATTN_IDX(batch_stride_o); ATTN_IDX(batch_stride_do); ATTN_IDX(batch_stride_lsed); ATTN_IDX(batch_stride_dq_acc);
  ATTN_IDX(batch_stride_dq); ATTN_IDX(batch_stride_dk); ATTN_IDX(batch_stride_dv); ATTN_IDX(batch_stride_dbias);
  ATTN_IDX(split_stride_dq_acc);
  ATTN_IDX(window_size_left); ATTN_IDX(window_size_right); ATTN_IDX(mask_type);
#undef ATTN_PTR
#undef ATTN_IDX
  args.stride_randval = 0;
  args.nhead_stride_randval = 0;
  args.batch_stride_randval = 0;
  args.p_drop = static_cast<float>(a.num("p_drop"));
  args.p_undrop = 1.f - args.p_drop;
  args.drop_seed_offset = std::make_pair(uint64_t{0}, uint64_t{0});
  const float r = fmha_bwd(traits, args, stream_of(info, 2));
  return Napi::Number::New(info.Env(), r);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("forward", Napi::Function::New(env, Forward, "forward"));
  exports.Set("backward", Napi::Function::New(env, Backward, "backward"));
  return exports;
}

}  // namespace

NODE_API_MODULE(attn_ck, Init)
