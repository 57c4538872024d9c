// CK tile fmha forward: plain traits/args objects from src/marshal/args.ts into fmha_fwd_traits /
// fmha_fwd_args (example/ck_tile/01_fmha/fmha_fwd.hpp), by field name; see ck_common.h.
#include "ck_common.h"
#include "fmha_fwd.hpp"

namespace attn_ck {
namespace {

// fmha_fwd_traits: 2024 has do_fp8_static_quant; newer CK replaced it by qscale_type (0 = no_scale,
// left at its value-initialised 0) and added has_logits_soft_cap, skip_min_seqlen_q, has_sink (false).
ATTN_CK_OPTIONAL_FIELD(do_fp8_static_quant)
// fmha_fwd_args: 2024 has the fp8 static-quant scales scale_p/scale_o (must be 1, not 0); newer CK
// dropped them (q/k/v_descale_ptr, logits_soft_cap, sink_size, min_seqlen_q stay 0/nullptr).
ATTN_CK_OPTIONAL_FIELD(scale_p)
ATTN_CK_OPTIONAL_FIELD(scale_o)
ck_tile::stream_config stream_of(const Napi::CallbackInfo& info, size_t i) {
  ck_tile::stream_config s{};
  s.stream_id_ = stream_arg(info, i);
  return s;
}

}  // namespace

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
  set_do_fp8_static_quant(traits, false);  // 2024 only; newer: qscale_type stays no_scale (0)

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
  args.seqlen_k_ptr = a.ptr("seqlen_k_ptr");  // group mode: sequsedK (used keys per sequence), else nullptr
  args.seqlen_q = a.idx("seqlen_q");
  args.seqlen_k = a.idx("seqlen_k");
  args.batch = a.idx("batch");
  args.max_seqlen_q = a.idx("max_seqlen_q");
  args.hdim_q = a.idx("hdim_q");
  args.hdim_v = a.idx("hdim_v");
  args.nhead_q = a.idx("nhead_q");
  args.nhead_k = a.idx("nhead_k");
  args.scale_s = static_cast<float>(a.num("scale_s"));
  set_scale_p(args, 1.f);  // 2024 only (fp8 static quant; 1 = off)
  set_scale_o(args, 1.f);
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

}  // namespace attn_ck
