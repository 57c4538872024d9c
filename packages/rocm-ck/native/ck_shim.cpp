// The N-API module of the shim over CK tile's fmha (example/ck_tile/01_fmha: fmha_fwd.hpp, fmha_bwd.hpp). It copies
// the plain traits/args objects built in src/marshal/*.ts into CK's structs, by field name, and calls
// fmha_fwd / fmha_bwd on the given stream. Their result (< 0: no compiled instance) goes back to TS.
// Fields are set by name, never positionally (the structs are aggregates whose order changes between
// CK revisions; see README "Checked against CK" for the field-by-field table). Fields every known
// revision has are set directly, so a rename fails to compile here. Fields that only some revisions
// have are set through ATTN_CK_OPTIONAL_FIELD setters, which compile to nothing where the field is
// absent; every other field is value-initialised by `{}` (0, false, nullptr: CK's "off").
#include "ck_common.h"

namespace {

Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("archs", ATTN_ROCM_ARCHS_STRING);
  o.Set("ckCommit", ATTN_CK_FMHA_DIR);
  o.Set("bwdDqAccLayout", Napi::Boolean::New(info.Env(), attn_ck::BwdDqAccLayout()));
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info, "info"));
  exports.Set("forward", Napi::Function::New(env, attn_ck::Forward, "forward"));
  exports.Set("backward", Napi::Function::New(env, attn_ck::Backward, "backward"));
  return exports;
}

}  // namespace

NODE_API_MODULE(attn_ck, Init)
