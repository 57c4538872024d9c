// One score element of the backward: recompute the forward's probability from the saved logsumexp and
// turn (P, dP) into (P with dropout, dS). Works on any accumulator layout: the caller passes the
// element's query row i and key j (the dK/dV kernel holds S^T, the dQ kernel S).
//
// With x the final score in log2 units (scale or softcap, then ALiBi, as the forward):
//   P = exp2(x - lse * log2 e); Z = keep_scale or 0 (dropout replayed from the Philox state), else 1
//   dP <- Z * dP; dS = P * (dP - Dsum) * (1 - tanh^2 with softcap, else 1); P <- P * Z (for dV)
// dS is the gradient of scale * q.k; the caller multiplies dQ and dK by the scale once at the end.
#pragma once
#include <cmath>
#include <cstdint>

#include "attn/philox.h"
#include "attn/score_mods.h"
#include "common/fwd_params.h"
#include "common/row_state.h"

namespace attn::flash {

// What does not change within a CTA and query head.
struct BwdRowCtx {
  int off;  // alignment offset: seq_k - seq_q for lower-right, else 0
  int seq_k;
  float slope2;  // ALiBi slope of the head in log2 units, 0 without ALiBi
  uint32_t bh;   // b * Hq + h: the Philox counter word of the head
};

// The context of query head h of batch b (its ALiBi slope read once).
__device__ __forceinline__ BwdRowCtx bwd_row_ctx(const FwdParams& f, int off, int seq_k, int b, int h) {
  BwdRowCtx rc;
  rc.off = off;
  rc.seq_k = seq_k;
  rc.slope2 = f.alibi != nullptr ? __ldg(f.alibi + b * f.alibi_batch_stride + h) * f.alibi_mul : 0.f;
  rc.bh = static_cast<uint32_t>(int64_t(b) * f.heads_q + h);
  return rc;
}

// lse2: the row's logsumexp in log2 units, +inf for a row without a visible key or past the end
// (P = 0 then, never NaN). dsum: the row's rowsum(dO * O). keep: the element's dropout bit (true
// without dropout), computed by dropout_mask before the GEMMs so that Philox's registers are not live
// next to the S and dP accumulators.
__device__ __forceinline__ void grad_element(float& s, float& dp, int i, int j, float lse2, float dsum, bool keep,
                                             const FwdParams& f, const BwdRowCtx& c) {
  float x, dtanh = 1.f;
  if (f.softcap_out != 0.f) {
    const float th = tanh_ex2(s * f.softcap_in);
    x = f.softcap_out * th;
    dtanh = softcap_grad(th);
  } else {
    x = s * f.score_mul;
  }
  const int64_t diag = int64_t(i) + c.off;
  if (c.slope2 != 0.f) x = add_alibi(x, c.slope2, static_cast<float>(diag - j));
  const bool visible = j < c.seq_k && (f.window_right < 0 || j <= diag + f.window_right) &&
                       (f.window_left < 0 || j >= diag - f.window_left);
  const float pr = visible ? exp2_ftz(x - lse2) : 0.f;
  const float z = f.dropout ? (keep ? f.dropout_keep_scale : 0.f) : 1.f;
  s = pr * z;
  dp = softmax_grad(pr, dp * z, dsum) * dtanh;
}

// Whether every element of the tile [i0, i0 + rows) x [j0, j0 + cols) takes grad_element's plain form:
// no softcap, ALiBi or dropout, and every key of the tile inside the keys and inside the causal / window
// band of every row of the tile (rows past the end need no test: their lse2 is +inf, so P = 0). Uniform
// over the CTA, so the kernels branch once per tile and interior tiles skip the per-element masks
// (ncu, D128 S4k dK/dV kernel: 2.6x the instructions of FlashAttention-2's at the same MMA count).
__device__ __forceinline__ bool plain_tile(const FwdParams& f, const BwdRowCtx& c, int i0, int rows, int j0, int cols) {
  if (f.softcap_out != 0.f || c.slope2 != 0.f || f.dropout || j0 + cols > c.seq_k) return false;
  // The band's tightest corners: the first row against the last key (right edge), the last row against
  // the first key (left edge).
  if (f.window_right >= 0 && int64_t(j0) + cols - 1 > int64_t(i0) + c.off + f.window_right) return false;
  if (f.window_left >= 0 && int64_t(j0) < int64_t(i0) + rows - 1 + c.off - f.window_left) return false;
  return true;
}

// grad_element on a plain tile: x = s * score_mul, every element visible, no dropout. In two halves for
// kernels that have S before dP (the Hopper kernel computes P while the dP GEMM still runs).
__device__ __forceinline__ float prob_plain(float s, float lse2, float score_mul) {
  return exp2_ftz(fmaf(s, score_mul, -lse2));
}
__device__ __forceinline__ float grad_plain(float pr, float dp, float dsum) { return softmax_grad(pr, dp, dsum); }
__device__ __forceinline__ void grad_element_plain(float& s, float& dp, float lse2, float dsum, float score_mul) {
  s = prob_plain(s, lse2, score_mul);
  dp = grad_plain(s, dp, dsum);
}

// Dropout bits of up to 32 elements, bit k for element k of the caller's (tile, e) order; ij(k, i, j)
// gives an element's query row and key. All ones without dropout.
template <int kElems, typename IJ>
__device__ __forceinline__ uint32_t dropout_mask(const FwdParams& f, const BwdRowCtx& c, IJ ij) {
  static_assert(kElems <= 32, "one 32-bit mask");
  if (!f.dropout) return 0xffffffffu;
  uint32_t m = 0;
#pragma unroll 1
  for (int k = 0; k < kElems; ++k) {
    int i, j;
    ij(k, i, j);
    if (dropout_keep(f.dropout_seed, f.dropout_offset, c.bh, static_cast<uint32_t>(i), static_cast<uint32_t>(j),
                     f.dropout_threshold))
      m |= 1u << k;
  }
  return m;
}

// The saved logsumexp of a row in log2 units, +inf where the row saw no key (lse = -inf).
__device__ __forceinline__ float lse_log2(float lse) { return lse == -INFINITY ? INFINITY : lse * 1.4426950408889634f; }

}  // namespace attn::flash
