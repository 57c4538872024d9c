// Plain-data parameters of one attention call as the kernels see them. Filled by addon.cpp from the
// arguments TS passes (already validated there) and re-checked cheaply by dispatch.cu.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define MEMEFF_HOST_DEVICE __host__ __device__
#else
#define MEMEFF_HOST_DEVICE
#endif

namespace memeff {

enum class MaskKind : int32_t { kNone = 0, kAdditive = 1, kBool = 2 };
// Element types as in attn/tensor_ref.h's DType (kFloat64 = 0, kFloat32 = 1, kFloat16 = 2, kBFloat16 = 3, kBool = 4).
enum ElemType : int32_t { kF64 = 0, kF32 = 1, kF16 = 2, kBF16 = 3, kBoolean = 4 };

struct FwdParams {
  // q [B, Hq, Sq, D], k [B, Hk, Sk, D], v [B, Hk, Sk, Dv], o [B, Hq, Sq, Dv]; strides in elements for
  // the batch, head and sequence dims (the last dim is contiguous).
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  int64_t q_stride[3] = {0, 0, 0};
  int64_t k_stride[3] = {0, 0, 0};
  int64_t v_stride[3] = {0, 0, 0};
  int64_t o_stride[3] = {0, 0, 0};
  // logsumexp of (b, h, i) at lse[b * lse_stride[0] + h * lse_stride[1] + i] (dense [B, Hq, Sq], varlen [Hq, totalQ]);
  // the backward's D and fp32 dQ rows (dsum, dq_accum) are laid out alike.
  float* lse = nullptr;
  int64_t lse_stride[2] = {0, 0};

  int32_t batch = 0, heads_q = 0, heads_kv = 0, group = 1;  // group = Hq / Hk
  int32_t seq_q = 0, seq_k = 0, head_dim = 0, head_dim_v = 0;
  float scale = 1.f;
  // Launchers split grids of more than 65535 (b, h) pairs; kernels add this to blockIdx.y (.z).
  int32_t bh_base = 0;

  // Bias or boolean mask, expanded to [B, Hq, Sq, Sk] by strides (0 on broadcast dims).
  MaskKind mask_kind = MaskKind::kNone;
  int32_t mask_dtype = kF32;
  const void* mask = nullptr;
  int64_t mask_stride[4] = {0, 0, 0, 0};
  // The 3xTF32 forward on wgmma (fwd/fwd_tf32_wgmma.cuh) instead of mma.sync (fwd/fwd_tf32.cuh): dispatch.cu sets
  // it on sm90 with an sm_90a build for calls without a mask, for masked ones at d128, and for calls with features.
  bool tf32_wgmma = false;

  // Which keys query i sees, around its diagonal key i + diag_offset (diag_offset = Sk - Sq lower-right, 0
  // upper-left): key j < seq_k is visible iff
  //   j <= i + right_offset when has_right (causal, or a window's right side), and
  //   j >= i + left_offset when has_left (a window's left side).
  // right_offset = diag_offset + window_right and left_offset = diag_offset - window_left (window_right already
  // min'd with 0 under causal): set_bounds (common/score_mods.cuh) derives them, on the host for the whole call
  // and in the kernels per sequence (varlen, sequsedK: bind_sequence).
  bool has_right = false;
  int64_t right_offset = 0;
  bool has_left = false;
  int64_t left_offset = 0;
  int64_t diag_offset = 0;
  bool lower_right = false;
  int64_t window_right = 0, window_left = 0;

  // ALiBi: scores get -slope * |i + diag_offset - j|, slope = alibi[b * alibi_stride[0] + h * alibi_stride[1]]
  // (float32 [Hq] or [B, Hq]); null: off.
  const float* alibi = nullptr;
  int64_t alibi_stride[2] = {0, 0};
  // Softcap: scores become softcap * tanh(dot * softcap_in), softcap_in = scale / softcap, before ALiBi and the
  // mask; 0: off.
  float softcap = 0.f;
  float softcap_in = 0.f;

  // Varlen: q, k, v, o are packed [total, H, D] (batch strides 0) and sequence b's rows start at cu_seqlens_q[b]
  // / cu_seqlens_k[b] (device int32 [B + 1]); seq_q and seq_k are the longest lengths. null: dense.
  const int32_t* cu_seqlens_q = nullptr;
  const int32_t* cu_seqlens_k = nullptr;
  int32_t total_q = 0, total_k = 0;  // varlen: rows of the packed q and k
  // sequsedK (device int32 [B]): sequence b behaves as if it had only its first seqused_k[b] keys. null: all.
  const int32_t* seqused_k = nullptr;
  // Rows of K and V in the sequence a kernel works on (seq_k before sequsedK): dK and dV rows in [seq_k,
  // seq_k_rows) are written as 0. bind_sequence sets it per sequence; the host sets it to seq_k.
  int32_t seq_k_rows = 0;
  // The call runs the feature kernels (kFeat, common/score_mods.cuh): a left bound, ALiBi, softcap, varlen or
  // sequsedK (set_features). Causal and a window's right side alone do not need them.
  bool features = false;

  // Dropout with core's Philox mapping (attn/philox.h).
  bool dropout = false;
  uint32_t dropout_threshold = 0;
  uint64_t dropout_seed = 0;
  uint32_t dropout_offset = 0;
  float dropout_keep_scale = 1.f;
};

struct BwdParams : FwdParams {
  const void* dout = nullptr;  // [B, Hq, Sq, Dv]
  int64_t do_stride[3] = {0, 0, 0};
  void* dq = nullptr;  // [B, Hq, Sq, D]
  void* dk = nullptr;  // [B, Hk, Sk, D]
  void* dv = nullptr;  // [B, Hk, Sk, Dv]
  int64_t dq_stride[3] = {0, 0, 0};
  int64_t dk_stride[3] = {0, 0, 0};
  int64_t dv_stride[3] = {0, 0, 0};

  // Gradient of an additive mask in the mask's own shape and dtype; strides expanded to
  // [B, Hq, Sq, Sk] with 0 on the dims the gradient is summed over.
  void* dbias = nullptr;
  int64_t dbias_stride[4] = {0, 0, 0, 0};
  // Sizes of dbias along [B, Hq, Sq, Sk] (1 on summed dims).
  int32_t dbias_size[4] = {1, 1, 1, 1};
  // When set, the main kernels add dS into this fp32 array (dbias's own shape, same strides) with
  // atomics instead of storing: a dbias summed only over batch and heads, non-deterministic mode. It
  // is dbias itself for an fp32 mask, else a workspace that bwd_dbias_convert turns into the dtype.
  float* dbias_accum = nullptr;
  // The tensor-core backward sends dS to dbias (or dbias_accum) four adjacent keys at a time, after a
  // transpose inside each group of 4 lanes: one red.global.add.v4.f32 (sm90) or one 8/16-byte store per
  // 4 elements instead of 4 scalar ones. Set by dispatch.cu where dbias (or the accumulator) is
  // contiguous along keys with 16-byte-aligned rows.
  bool dbias_quads = false;
  // With dbias atomics, the tensor-core backward's blocks start their query walk at an offset per (b, kv head)
  // (bwd_step.cuh), so that heads running side by side do not add into the same dbias rows at the same time.
  bool dbias_stagger = false;
  // dbias summed over heads with a GQA group > 1, atomics: the tensor-core backward walks the group's
  // heads innermost and adds their dS for one (query block, key block) in shared memory first, so only
  // the group's last head sends reductions (1 / group of them). Same fp32 adds, another grouping.
  bool dbias_presum = false;
  // fp32 with the 3xTF32 backward (bwd_tf32.cuh): D by bwd_dsum_tf32_kernel, in the arithmetic of that
  // kernel's dP (set by dispatch.cu with the kernel). Otherwise fp32's D is one sequential fmaf chain in
  // bwd_tile's dP order (bwd_pre_post.cuh).
  bool dsum_tf32 = false;
  // D's head dim summed in two parts, the first dsum_tf32_half k8 steps and the rest, then added: the order
  // of bwd_tf32's d128 form (Tf32BwdTraits::kDSplit = 2); 0: one running sum (d64).
  int dsum_tf32_half = 0;

  // fp32 workspaces (carved by dispatch.cu out of one buffer that TS allocates).
  float* dsum = nullptr;      // rowsum(dO * O), rows as lse's
  float* dq_accum = nullptr;  // [lse rows][D] when dq is accumulated with atomics
  float* dk_accum = nullptr;  // [splits][kv rows][D] when the query range is split
  float* dv_accum = nullptr;  // [splits][kv rows][Dv]
  // Row of key j of (b, kv head hk) in the partials: split * kv_accum_rows + b * kv_accum_stride[0] +
  // hk * kv_accum_stride[1] + j (dense [B, Hk, Sk], varlen [Hk, totalK]; bind_sequence adds the sequence's start).
  int64_t kv_accum_stride[2] = {0, 0};
  int64_t kv_accum_rows = 0;
  int32_t query_splits = 1;
  bool deterministic = false;
};

// The bound offsets of FwdParams from seq_q, seq_k, lower_right and the window sides: once for the whole call on
// the host, per sequence in the kernels (bind_sequence).
MEMEFF_HOST_DEVICE inline void set_bounds(FwdParams& p) {
  p.diag_offset = p.lower_right ? static_cast<int64_t>(p.seq_k) - p.seq_q : 0;
  p.right_offset = p.diag_offset + p.window_right;
  p.left_offset = p.diag_offset - p.window_left;
}

// Whether the call needs the feature kernels (FwdParams::features).
inline bool needs_features(const FwdParams& p) {
  return p.has_left || p.alibi != nullptr || p.softcap != 0.f || p.cu_seqlens_q != nullptr || p.seqused_k != nullptr;
}

}  // namespace memeff
