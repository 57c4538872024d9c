// The N-API module of the shim over CK tile's fmha (example/ck_tile/01_fmha: fmha_fwd.hpp, fmha_bwd.hpp). It copies
// the plain traits/args objects built in src/marshal/*.ts into CK's structs, by field name, and calls
// fmha_fwd / fmha_bwd on the given stream. Their result (< 0: no compiled instance) goes back to TS.
// sumHeadGroups launches the GQA/MQA dK/dV head-group sum that follows CK's backward (head_group_sum.h).
// Fields are set by name, never positionally (the structs are aggregates whose order changes between
// CK revisions; see README "Checked against CK" for the field-by-field table). Fields every known
// revision has are set directly, so a rename fails to compile here. Fields that only some revisions
// have are set through ATTN_CK_OPTIONAL_FIELD setters, which compile to nothing where the field is
// absent; every other field is value-initialised by `{}` (0, false, nullptr: CK's "off").
#include "ck_common.h"
#include "head_group_sum.h"

namespace {

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("archs", ATTN_ROCM_ARCHS_STRING);
  o.Set("ckCommit", ATTN_CK_FMHA_DIR);
  o.Set("bwdDqAccLayout", Napi::Boolean::New(info.Env(), attn_ck::BwdDqAccLayout()));
  return o;
}

// sumHeadGroups({ src, dst, dtype, outer, headsKV, group, inner }, stream)
Napi::Value SumHeadGroups(const Napi::CallbackInfo& info) {
  const attn_ck::Reader a = attn_ck::reader(info, 0);
  attn_ck::HeadGroupSum s;
  s.src = static_cast<const uint16_t*>(a.ptr("src"));
  s.dst = static_cast<uint16_t*>(a.ptr("dst"));
  const std::string dtype = a.str("dtype");
  if (dtype != "fp16" && dtype != "bf16") attn_ck::fail(info.Env(), "sumHeadGroups: dtype must be 'fp16' or 'bf16'");
  s.bf16 = dtype == "bf16";
  s.outer = static_cast<int64_t>(a.num("outer"));
  s.heads_kv = static_cast<int64_t>(a.num("headsKV"));
  s.group = static_cast<int64_t>(a.num("group"));
  s.inner = static_cast<int64_t>(a.num("inner"));
  if (s.src == nullptr || s.dst == nullptr || s.outer < 0 || s.heads_kv < 1 || s.group < 1 || s.inner < 0) {
    attn_ck::fail(info.Env(), "sumHeadGroups: null buffer or bad extents");
  }
  const hipError_t err = attn_ck::launch_head_group_sum(s, attn_ck::stream_arg(info, 1));
  if (err != hipSuccess)
    attn_ck::fail(info.Env(), std::string("head_group_sum kernel launch: ") + hipGetErrorString(err));
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("forward", Napi::Function::New(env, attn_ck::Forward, "forward"));
  exports.Set("backward", Napi::Function::New(env, attn_ck::Backward, "backward"));
  exports.Set("sumHeadGroups", Napi::Function::New(env, SumHeadGroups, "sumHeadGroups"));
  return exports;
}

}  // namespace

NODE_API_MODULE(attn_ck, Init)
