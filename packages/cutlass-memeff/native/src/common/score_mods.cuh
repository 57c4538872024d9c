// What every kernel does to one score element (b, h, i, j): scale, softcap, ALiBi, the causal and window bounds,
// bias or boolean mask, and the dropout decision with core's Philox mapping; and what a kernel does to find its
// sequence (varlen, sequsedK: bind_sequence). Kept apart from the kernel bodies so that the forward, the backward
// and every path agree bit for bit on which elements are masked and dropped.
#pragma once
#include <cmath>
#include <cstdint>

#include "attn/philox.h"
#include "attn/score_mods.h"
#include "common/dtype_traits.cuh"
#include "common/params.h"

namespace memeff {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// A finished row's 1/l and logsumexp from its running max m (log2 units) and sum l. l = 0 only where
// the row saw no visible key: out 0, lse -inf. fmaxf drops NaN, so a row of NaN logits keeps m = -inf,
// but exp2(NaN) makes l NaN: such a row gives NaN in out and lse, never the fully masked -inf (an
// lse merge, split-KV or ring attention, would then silently drop it). +Inf logits make l NaN too.
__device__ __forceinline__ float row_inv_sum(float l) { return l == 0.f ? 0.f : 1.f / l; }
__device__ __forceinline__ float row_lse(float m, float l) { return l == 0.f ? -INFINITY : (m + log2f(l)) * kLn2; }

// Sequence b of a varlen or sequsedK call into p: its lengths (seq_q, seq_k after sequsedK, seq_k_rows before
// it), its bound offsets, and the row starts of the per-sequence pointers (varlen: cu_seqlens; the batch strides
// are 0 there). Dense calls without sequsedK leave p as it is. esize: bytes per q / k / v / o element.
__device__ __forceinline__ void bind_sequence(FwdParams& p, int b, int esize) {
  if (p.cu_seqlens_q != nullptr) {
    const int q0 = p.cu_seqlens_q[b], k0 = p.cu_seqlens_k[b];
    p.seq_q = p.cu_seqlens_q[b + 1] - q0;
    p.seq_k = p.cu_seqlens_k[b + 1] - k0;
    p.q = static_cast<const char*>(p.q) + q0 * p.q_stride[2] * esize;
    p.k = static_cast<const char*>(p.k) + k0 * p.k_stride[2] * esize;
    p.v = static_cast<const char*>(p.v) + k0 * p.v_stride[2] * esize;
    p.o = static_cast<char*>(p.o) + q0 * p.o_stride[2] * esize;
    p.lse += q0;
  }
  p.seq_k_rows = p.seq_k;
  if (p.seqused_k != nullptr) p.seq_k = max(0, min(p.seq_k, p.seqused_k[b]));
  if (p.cu_seqlens_q != nullptr || p.seqused_k != nullptr) set_bounds(p);
}

// ... and the backward's per-sequence pointers: dO, the gradients, D and the fp32 workspaces.
__device__ __forceinline__ void bind_sequence(BwdParams& p, int b, int esize) {
  if (p.cu_seqlens_q != nullptr) {
    const int q0 = p.cu_seqlens_q[b], k0 = p.cu_seqlens_k[b];
    p.dout = static_cast<const char*>(p.dout) + q0 * p.do_stride[2] * esize;
    p.dq = static_cast<char*>(p.dq) + q0 * p.dq_stride[2] * esize;
    p.dk = static_cast<char*>(p.dk) + k0 * p.dk_stride[2] * esize;
    p.dv = static_cast<char*>(p.dv) + k0 * p.dv_stride[2] * esize;
    p.dsum += q0;
    if (p.dq_accum != nullptr) p.dq_accum += static_cast<int64_t>(q0) * p.head_dim;
    if (p.dk_accum != nullptr) p.dk_accum += static_cast<int64_t>(k0) * p.head_dim;
    if (p.dv_accum != nullptr) p.dv_accum += static_cast<int64_t>(k0) * p.head_dim_v;
  }
  bind_sequence(static_cast<FwdParams&>(p), b, esize);
}

// The mask (or bias) of one (b, h) pair: base pointer with the batch and head strides applied.
struct MaskView {
  const void* base;
  int64_t stride_i, stride_j;
  MaskKind kind;
  int32_t dtype;
};

__device__ __forceinline__ MaskView mask_view(const FwdParams& p, int b, int h) {
  MaskView m{nullptr, 0, 0, p.mask_kind, p.mask_dtype};
  if (p.mask_kind != MaskKind::kNone) {
    const int64_t off = b * p.mask_stride[0] + h * p.mask_stride[1];
    const int esize = p.mask_dtype == kF64 ? 8 : p.mask_dtype == kF32 ? 4 : p.mask_dtype == kBoolean ? 1 : 2;
    m.base = static_cast<const char*>(p.mask) + off * esize;
    m.stride_i = p.mask_stride[2];
    m.stride_j = p.mask_stride[3];
  }
  return m;
}

// The visibility rule of one block in 32-bit compares: key j is visible from query i iff i < sq, j < sk,
// j <= i + rc and j >= i + lc. rc and lc are the bound offsets clamped to +-2^30 (query indices are < 2^21, so
// i + rc cannot overflow), 2^30 / -2^30 for an unbounded side.
struct KeyBounds {
  int sq, sk, rc, lc;
  __device__ __forceinline__ bool visible(int i, int j) const { return i < sq && j < sk && j <= i + rc && j >= i + lc; }
};

__device__ __forceinline__ int clamp_offset(int64_t x) {
  constexpr int64_t kLim = static_cast<int64_t>(1) << 30;
  return static_cast<int>(x < -kLim ? -kLim : x > kLim ? kLim : x);
}

// The right bound as j <= i + right_coff(p) in 32-bit compares, for steps without a mask: 2^30 when unbounded.
__device__ __forceinline__ int right_coff(const FwdParams& p) {
  return p.has_right ? clamp_offset(p.right_offset) : 1 << 30;
}
__device__ __forceinline__ int left_coff(const FwdParams& p) {
  return p.has_left ? clamp_offset(p.left_offset) : -(1 << 30);
}

__device__ __forceinline__ KeyBounds key_bounds(const FwdParams& p) {
  return KeyBounds{p.seq_q, p.seq_k, right_coff(p), left_coff(p)};
}

// What the per-element rule needs of one (b, h): its visibility bounds, its ALiBi slope (0 without ALiBi) and
// diagonal offset as a float (ALiBi's distance |i - j + diag_offset| in float arithmetic: no overflow at any
// length, exact below 2^24).
struct ScoreCtx {
  KeyBounds kb;
  float slope;
  float diag;
};

__device__ __forceinline__ ScoreCtx score_ctx(const FwdParams& p, int b, int h) {
  const float slope = p.alibi != nullptr ? p.alibi[b * p.alibi_stride[0] + h * p.alibi_stride[1]] : 0.f;
  return ScoreCtx{key_bounds(p), slope, static_cast<float>(p.diag_offset)};
}

// The call has per-score modifiers (softcap or ALiBi): no tile of it is plain scale * dot. The fp32 feature
// kernels without a mask come with and without their code (kMods): the launchers pick by this.
MEMEFF_HOST_DEVICE inline bool has_score_mods(const FwdParams& p) { return p.softcap != 0.f || p.alibi != nullptr; }

// tanh on |x| < kTanhPolyLimit within 2 ulp: x + x^3 p(x^2), the odd minimax polynomial that CUDA's tanhf
// evaluates there (the same coefficients and operations, so the same bits), without tanhf's exp branch for
// larger |x| and its select. NaN gives NaN.
constexpr float kTanhPolyLimit = 0.6f;
__device__ __forceinline__ float tanh_poly(float x) {
  const float x2 = x * x;
  float q = fmaf(0x1.01e104p-6f, x2, -0x1.ac795cp-5f);
  q = fmaf(q, x2, 0x1.10b282p-3f);
  q = fmaf(q, x2, -0x1.5553dap-2f);
  return fmaf(q * x2, x, x);
}

// tanh for softcap: kAccurate (fp32 kernels) CUDA's tanhf (2 ulp); otherwise attn/fast_math.h's one-ex2 tanh,
// ~1e-7 absolute (flash-cuda's, enough for 16-bit outputs). Both give +-1 at +-Inf and NaN for NaN.
template <bool kAccurate>
__device__ __forceinline__ float softcap_tanh(float x) {
  if constexpr (kAccurate) {
    return tanhf(x);
  } else {
    return tanh_ex2(x);
  }
}

// scale * dot with softcap and ALiBi, in natural-log units and in docs/ARCHITECTURE.md's order (softcap, then ALiBi; the mask
// comes after). dcap: d(score) / d(scale * dot), 1 - tanh^2 with softcap, else 1 (the backward's chain rule).
template <bool kAccurate>
__device__ __forceinline__ float modded_score(const FwdParams& p, const ScoreCtx& sc, int i, int j, float dot,
                                              float& dcap) {
  float s;
  dcap = 1.f;
  if (p.softcap != 0.f) {
    const float th = softcap_tanh<kAccurate>(dot * p.softcap_in);
    s = p.softcap * th;
    dcap = attn::softcap_grad(th);
  } else {
    s = dot * p.scale;
  }
  if (p.alibi != nullptr) s = attn::add_alibi(s, sc.slope, static_cast<float>(i - j) + sc.diag);
  return s;
}

// The logit of element (i, j) given dot = q_i . k_j, natural-log units: scale * dot (kFeat: softcap and ALiBi,
// modded_score) plus the bias, or -inf where the bounds, causal, the window or a false mask entry remove it
// (padding rows and keys of a tile never read the mask). kFeat = false: the kernels built without the features,
// where the call has none (dispatch.cu). dcap as modded_score's (1 without kFeat).
template <bool kFeat, bool kAccurate>
__device__ __forceinline__ float masked_logit(const FwdParams& p, const MaskView& m, const ScoreCtx& sc, int i, int j,
                                              float dot, float& dcap) {
  dcap = 1.f;
  if (!sc.kb.visible(i, j)) return -INFINITY;
  if (m.kind == MaskKind::kBool && static_cast<const uint8_t*>(m.base)[i * m.stride_i + j * m.stride_j] == 0)
    return -INFINITY;
  float s = kFeat ? modded_score<kAccurate>(p, sc, i, j, dot, dcap) : dot * p.scale;
  if (m.kind == MaskKind::kAdditive) s += load_any_float(m.base, m.dtype, i * m.stride_i + j * m.stride_j);
  return s;
}
template <bool kFeat, bool kAccurate>
__device__ __forceinline__ float masked_logit(const FwdParams& p, const MaskView& m, const ScoreCtx& sc, int i, int j,
                                              float dot) {
  float dcap;
  return masked_logit<kFeat, kAccurate>(p, m, sc, i, j, dot, dcap);
}

// True when every key of the tile [i0, i0 + m) x [j0, j0 + n) is in bounds and visible from every query (the
// causal and window bounds; masks and score modifiers aside). kFeat = false: a kernel without the features
// (no left bound to look at).
template <bool kFeat>
__device__ __forceinline__ bool tile_in_view(const FwdParams& p, int i0, int m, int j0, int n) {
  if (j0 + n > p.seq_k) return false;
  if (p.has_right && j0 + n - 1 > i0 + p.right_offset) return false;
  if (kFeat && p.has_left && j0 < static_cast<int64_t>(i0) + m - 1 + p.left_offset) return false;
  return true;
}

// True when every score of the tile is plain scale * dot: in view, no mask, no softcap or ALiBi. The kernels
// then skip the per-element work.
template <bool kFeat>
__device__ __forceinline__ bool tile_unmasked(const FwdParams& p, int i0, int m, int j0, int n) {
  if (p.mask_kind != MaskKind::kNone || (kFeat && has_score_mods(p))) return false;
  return tile_in_view<kFeat>(p, i0, m, j0, n);
}

// True when the tile is in view and unmasked but the call has softcap or ALiBi: its scores need modded_score
// and nothing else (no bounds, no mask), so the kernels take ModRule on it instead of masked_logit.
template <bool kFeat>
__device__ __forceinline__ bool tile_mods_only(const FwdParams& p, int i0, int m, int j0, int n) {
  return kFeat && p.mask_kind == MaskKind::kNone && has_score_mods(p) && tile_in_view<kFeat>(p, i0, m, j0, n);
}

// modded_score for the scores of one thread on an in-view tile, in log2 units, with the per-score work cut to
// what the call has: the softcap and ALiBi tests are made once per tile (the kernels branch around whole
// loops), and ALiBi's distance |i - j + diag| is `base + c`, where base = (i_first - j_first) + diag is
// converted once per tile and c, the element's offset from that thread's first element, is a compile-time
// constant of the fragment layout (no int-to-float conversion per score; exact, as masked_logit's, while
// |i - j + diag| < 2^24). A thread's logit of dot at offset c: softcap * tanh_args(dot) (cap) or
// dot * scale_log2, then add_alibi(., c) (alibi).
struct ModRule {
  float softcap, softcap_in, scale_log2, slope_log2, base;
  bool cap, alibi;

  __device__ __forceinline__ ModRule(const FwdParams& p, const ScoreCtx& sc, int i_first, int j_first)
      : softcap(p.softcap * kLog2e),
        softcap_in(p.softcap_in),
        scale_log2(p.scale * kLog2e),
        slope_log2(sc.slope * kLog2e),
        base(static_cast<float>(i_first - j_first) + sc.diag),
        cap(p.softcap != 0.f),
        alibi(sc.slope != 0.f) {}  // a zero slope adds -0 * |d| = -0: nothing (NaN slopes are applied)

  // th = tanh(dot * softcap_in) for a thread's scores (the softcap's tanh; softcap * th is the log2 logit
  // and 1 - th^2 its derivative). kAccurate: where every argument of the warp is below kTanhPolyLimit, the
  // polynomial alone (tanhf's own value there, at a third of its instructions; the warp takes one branch),
  // else tanhf. Softcaps keep most arguments small (|dot * scale| < 0.6 softcap), so in-view tiles of
  // typical calls take the polynomial. A NaN argument fails the test: tanhf's NaN. th may be dot (in place).
  template <bool kAccurate, int NT>
  __device__ __forceinline__ void tanh_args(const float (&dot)[NT][4], float (&th)[NT][4]) const {
    bool small = true;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        th[n][e] = dot[n][e] * softcap_in;
        if constexpr (kAccurate) small &= fabsf(th[n][e]) < kTanhPolyLimit;
      }
    if constexpr (kAccurate) {
      if (__all_sync(0xffffffffu, small)) {
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) th[n][e] = tanh_poly(th[n][e]);
        return;
      }
    }
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) th[n][e] = softcap_tanh<kAccurate>(th[n][e]);
  }

  // The ALiBi term of the score at offset c (i - j = i_first - j_first + c) added to s (log2 units).
  __device__ __forceinline__ float add_alibi(float s, float c) const {
    return attn::add_alibi(s, slope_log2, base + c);
  }
};

// The first key visible from query i_first (the window's left bound of a query block [i_first, ...]).
__device__ __forceinline__ int key_begin_for_queries(const FwdParams& p, int i_first) {
  if (!p.has_left) return 0;
  const int64_t b = static_cast<int64_t>(i_first) + p.left_offset;
  return static_cast<int>(b < 0 ? 0 : b > p.seq_k ? p.seq_k : b);
}

// Keys [0, end) can be visible from queries [i0, i_last]: the right bound of a query block.
__device__ __forceinline__ int key_end_for_queries(const FwdParams& p, int i_last) {
  if (!p.has_right) return p.seq_k;
  const int64_t e = static_cast<int64_t>(i_last) + p.right_offset + 1;
  return static_cast<int>(e < 0 ? 0 : e > p.seq_k ? p.seq_k : e);
}

// Key steps of n keys a query block [i0, i0 + m) walks: [key_step_begin, key_step_end) (its bounds, rounded out).
__device__ __forceinline__ int key_step_begin(const FwdParams& p, int i0, int n) {
  return key_begin_for_queries(p, i0) / n;
}
__device__ __forceinline__ int key_blocks_for_queries(const FwdParams& p, int i0, int m, int n) {
  return (key_end_for_queries(p, min(i0 + m, p.seq_q) - 1) + n - 1) / n;
}

// First query that can see key j_first (the right bound of a key block in the backward).
__device__ __forceinline__ int query_begin_for_key(const FwdParams& p, int j_first) {
  if (!p.has_right) return 0;
  const int64_t b = static_cast<int64_t>(j_first) - p.right_offset;
  return static_cast<int>(b < 0 ? 0 : b > p.seq_q ? p.seq_q : b);
}

// Queries [0, end) can see a key of [j_first, j_last] (the left bound of a key block in the backward).
__device__ __forceinline__ int query_end_for_key(const FwdParams& p, int j_last) {
  if (!p.has_left) return p.seq_q;
  const int64_t e = static_cast<int64_t>(j_last) - p.left_offset + 1;
  return static_cast<int>(e < 0 ? 0 : e > p.seq_q ? p.seq_q : e);
}

// Where logsumexp (and the backward's D) of row i of (b, h) is.
__device__ __forceinline__ int64_t lse_row(const FwdParams& p, int b, int h, int i) {
  return b * p.lse_stride[0] + h * p.lse_stride[1] + i;
}

// The backward's P of a score from its row's logsumexp lse2 (log2 units): exp2(exponent), 0 on a row that saw no
// key (lse2 = -inf: a padded or fully masked row), selected after the exp2 so that no branch is taken per score
// (the exp2 is inf or NaN there, never used). prob_of_exponent takes the exponent logit2 - lse2 as the caller
// formed it (e.g. a bias and -lse2 in one FMA), prob_of_logit2 forms it.
__device__ __forceinline__ float prob_of_exponent(float exponent, float lse2) {
  const float x = exp2f(exponent);
  return lse2 != -INFINITY ? x : 0.f;
}
__device__ __forceinline__ float prob_of_logit2(float logit2, float lse2) {
  return prob_of_exponent(logit2 - lse2, lse2);
}

__device__ __forceinline__ bool dropout_kept(const FwdParams& p, int b, int h, int i, int j) {
  return attn::dropout_keep(p.dropout_seed, p.dropout_offset, static_cast<uint32_t>(b * p.heads_q + h),
                            static_cast<uint32_t>(i), static_cast<uint32_t>(j), p.dropout_threshold);
}

// The two keep decisions of keys j and j + 1 (j even) from one Philox call.
__device__ __forceinline__ void dropout_kept_pair(const FwdParams& p, int b, int h, int i, int j, bool& k0, bool& k1) {
  attn::dropout_keep_pair(p.dropout_seed, p.dropout_offset, static_cast<uint32_t>(b * p.heads_q + h),
                          static_cast<uint32_t>(i), static_cast<uint32_t>(j), p.dropout_threshold, k0, k1);
}

}  // namespace memeff
