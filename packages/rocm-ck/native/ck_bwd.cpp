// CK tile fmha backward: plain traits/args objects from src/marshal/backward.ts into fmha_bwd_traits /
// fmha_bwd_args (example/ck_tile/01_fmha/fmha_bwd.hpp), by field name; see ck_common.h.
#include "ck_common.h"
#include "fmha_bwd.hpp"

namespace attn_ck {
namespace {

// fmha_bwd_args: the dq_acc layout (2024 to at least PyTorch's early-2025 vendored copy). The newest
// indexed CK replaced it with workspace_ptr sized by fmha_bwd_launcher; see Backward().
ATTN_CK_OPTIONAL_FIELD(dq_acc_ptr)
ATTN_CK_OPTIONAL_FIELD(stride_dq_acc)
ATTN_CK_OPTIONAL_FIELD(nhead_stride_dq_acc)
ATTN_CK_OPTIONAL_FIELD(batch_stride_dq_acc)
ATTN_CK_OPTIONAL_FIELD(split_stride_dq_acc)

/** Whether this CK's fmha_bwd_args is the dq_acc layout the binding marshals (see marshal/backward.ts). */
constexpr bool kBwdDqAccLayout = has_dq_acc_ptr<fmha_bwd_args>::value && has_split_stride_dq_acc<fmha_bwd_args>::value;

ck_tile::stream_config stream_of(const Napi::CallbackInfo& info, size_t i) {
  ck_tile::stream_config s{};
  s.stream_id_ = stream_arg(info, i);
  return s;
}

}  // namespace

bool BwdDqAccLayout() { return kBwdDqAccLayout; }

Napi::Value Backward(const Napi::CallbackInfo& info) {
  if constexpr (!kBwdDqAccLayout) {
    // The newest CK sizes a workspace through fmha_bwd_launcher (host-packed metadata + dq_acc)
    // instead of taking dq_acc and its strides; TS declines backward from info().bwdDqAccLayout.
    fail(info.Env(),
         "this CK's fmha_bwd_args has no dq_acc_ptr/split_stride_dq_acc (the workspace_ptr layout of "
         "fmha_bwd_launcher); attn's CK backward supports the dq_acc layout only");
  }
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
  ATTN_PTR(q_ptr);
  ATTN_PTR(k_ptr);
  ATTN_PTR(v_ptr);
  ATTN_PTR(bias_ptr);
  ATTN_PTR(o_ptr);
  ATTN_PTR(lse_ptr);
  ATTN_PTR(do_ptr);
  ATTN_PTR(d_ptr);
  ATTN_PTR(dq_ptr);
  ATTN_PTR(dk_ptr);
  ATTN_PTR(dv_ptr);
  ATTN_PTR(dbias_ptr);
  set_dq_acc_ptr(args, a.ptr("dq_acc_ptr"));
  ATTN_PTR(seqstart_q_ptr);
  ATTN_PTR(seqstart_k_ptr);
  args.rand_val_ptr = nullptr;
  ATTN_PTR(seqlen_k_ptr);  // group mode: sequsedK, else nullptr
  ATTN_IDX(seqlen_q);
  ATTN_IDX(seqlen_k);
  ATTN_IDX(batch);
  ATTN_IDX(max_seqlen_q);
  ATTN_IDX(max_seqlen_k);
  ATTN_IDX(hdim_q);
  ATTN_IDX(hdim_v);
  ATTN_IDX(nhead_q);
  ATTN_IDX(nhead_k);
  args.scale = static_cast<float>(a.num("scale"));
  ATTN_IDX(stride_q);
  ATTN_IDX(stride_k);
  ATTN_IDX(stride_v);
  ATTN_IDX(stride_bias);
  ATTN_IDX(stride_o);
  ATTN_IDX(stride_do);
  set_stride_dq_acc(args, a.idx("stride_dq_acc"));
  ATTN_IDX(stride_dq);
  ATTN_IDX(stride_dk);
  ATTN_IDX(stride_dv);
  ATTN_IDX(stride_dbias);
  ATTN_IDX(nhead_stride_q);
  ATTN_IDX(nhead_stride_k);
  ATTN_IDX(nhead_stride_v);
  ATTN_IDX(nhead_stride_bias);
  ATTN_IDX(nhead_stride_o);
  ATTN_IDX(nhead_stride_do);
  ATTN_IDX(nhead_stride_lsed);
  set_nhead_stride_dq_acc(args, a.idx("nhead_stride_dq_acc"));
  ATTN_IDX(nhead_stride_dq);
  ATTN_IDX(nhead_stride_dk);
  ATTN_IDX(nhead_stride_dv);
  ATTN_IDX(nhead_stride_dbias);
  ATTN_IDX(batch_stride_q);
  ATTN_IDX(batch_stride_k);
  ATTN_IDX(batch_stride_v);
  ATTN_IDX(batch_stride_bias);
  ATTN_IDX(batch_stride_o);
  ATTN_IDX(batch_stride_do);
  ATTN_IDX(batch_stride_lsed);
  set_batch_stride_dq_acc(args, a.idx("batch_stride_dq_acc"));
  ATTN_IDX(batch_stride_dq);
  ATTN_IDX(batch_stride_dk);
  ATTN_IDX(batch_stride_dv);
  ATTN_IDX(batch_stride_dbias);
  set_split_stride_dq_acc(args, a.idx("split_stride_dq_acc"));
  ATTN_IDX(window_size_left);
  ATTN_IDX(window_size_right);
  ATTN_IDX(mask_type);
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

}  // namespace attn_ck
