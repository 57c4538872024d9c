// What every kernel does to one score element (b, h, i, j): scale, causal, bias or boolean mask,
// and the dropout decision with core's Philox mapping. Kept apart from the kernel bodies so the
// forward, the backward and both paths agree bit for bit on which elements are masked and dropped.
#pragma once
#include <cmath>
#include <cstdint>

#include "attn/philox.h"
#include "common/dtype_traits.cuh"
#include "common/params.h"

namespace memeff {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// 2^x as one MUFU.EX2 (ex2.approx.ftz): exp2f without fast-math is the same approximation (2 ulp)
// plus a denormal-result fixup (compare, two multiplies); ftz only flushes results below 2^-126,
// which vanish against a softmax row sum >= 1. exp2_ftz(-inf) = +0.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// A finished row's 1/l and logsumexp from its running max m (log2 units) and sum l. l = 0 only where
// the row saw no visible key: out 0, lse -inf. fmaxf drops NaN, so a row of NaN logits keeps m = -inf,
// but exp2(NaN) makes l NaN: such a row gives NaN in out and lse, never the fully masked -inf (an
// lse merge, split-KV or ring attention, would then silently drop it). +Inf logits make l NaN too.
__device__ __forceinline__ float row_inv_sum(float l) { return l == 0.f ? 0.f : 1.f / l; }
__device__ __forceinline__ float row_lse(float m, float l) { return l == 0.f ? -INFINITY : (m + log2f(l)) * kLn2; }

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

// The logit of element (i, j) given dot = q_i . k_j: scale * dot plus the bias, or -inf where the
// causal rule, a false mask entry or the bounds remove it (padding rows and keys of a tile never
// read the mask).
__device__ __forceinline__ float masked_logit(const FwdParams& p, const MaskView& m, int i, int j, float dot) {
  if (i >= p.seq_q || j >= p.seq_k || (p.causal && j > i + p.causal_offset)) return -INFINITY;
  float s = dot * p.scale;
  if (m.kind == MaskKind::kAdditive) {
    s += load_any_float(m.base, m.dtype, i * m.stride_i + j * m.stride_j);
  } else if (m.kind == MaskKind::kBool) {
    if (static_cast<const uint8_t*>(m.base)[i * m.stride_i + j * m.stride_j] == 0) return -INFINITY;
  }
  return s;
}

// The causal rule of masked_logit as j <= i + causal_coff(p) in 32-bit compares, for steps without a mask:
// the offset clamped so that i + coff cannot overflow (sequence lengths are < 2^21); no causal: 2^30.
__device__ __forceinline__ int causal_coff(const FwdParams& p) {
  if (!p.causal) return 1 << 30;
  return static_cast<int>(max(min(p.causal_offset, static_cast<int64_t>(1) << 30), -(static_cast<int64_t>(1) << 30)));
}

// True when the whole key range [j0, j0 + n) is visible from every query in [i0, i0 + m) and in
// bounds, with no mask: the kernels then skip the per-element work.
__device__ __forceinline__ bool tile_unmasked(const FwdParams& p, int i0, int j0, int n) {
  if (p.mask_kind != MaskKind::kNone) return false;
  if (j0 + n > p.seq_k) return false;
  if (p.causal && j0 + n - 1 > i0 + p.causal_offset) return false;
  return true;
}

// Keys [0, end) can be visible from queries [i0, i1): the causal bound of a query block.
__device__ __forceinline__ int key_end_for_queries(const FwdParams& p, int i_last) {
  if (!p.causal) return p.seq_k;
  const int64_t e = static_cast<int64_t>(i_last) + p.causal_offset + 1;
  return static_cast<int>(e < 0 ? 0 : e > p.seq_k ? p.seq_k : e);
}

// Key steps of kBlockN keys a query block [i0, i0 + m) walks (its causal bound, rounded up).
__device__ __forceinline__ int key_blocks_for_queries(const FwdParams& p, int i0, int m, int n) {
  return (key_end_for_queries(p, min(i0 + m, p.seq_q) - 1) + n - 1) / n;
}

// First query that can see key j (the causal bound of a key block in the backward).
__device__ __forceinline__ int query_begin_for_key(const FwdParams& p, int j_first) {
  if (!p.causal) return 0;
  const int64_t b = static_cast<int64_t>(j_first) - p.causal_offset;
  return static_cast<int>(b < 0 ? 0 : b > p.seq_q ? p.seq_q : b);
}

__device__ __forceinline__ bool dropout_kept(const FwdParams& p, int b, int h, int i, int j) {
  return attn::dropout_keep(p.dropout_seed, p.dropout_offset,
                            static_cast<uint32_t>(b * p.heads_q + h), static_cast<uint32_t>(i),
                            static_cast<uint32_t>(j), p.dropout_threshold);
}

// The two keep decisions of keys j and j + 1 (j even) from one Philox call.
__device__ __forceinline__ void dropout_kept_pair(const FwdParams& p, int b, int h, int i, int j, bool& k0, bool& k1) {
  const attn::Philox4 r = attn::dropout_words(p.dropout_seed, p.dropout_offset,
                                              static_cast<uint32_t>(b * p.heads_q + h),
                                              static_cast<uint32_t>(i), static_cast<uint32_t>(j) >> 2);
  const uint32_t w = static_cast<uint32_t>(j) & 3u;
  k0 = attn::philox_word(r, w) >= p.dropout_threshold;
  k1 = attn::philox_word(r, w + 1) >= p.dropout_threshold;
}

}  // namespace memeff
