// The per-row work of the fp32 forwards (fwd_tf32.cuh on mma.sync, fwd_tf32_wgmma.cuh on wgmma), which share
// the accumulator layout: a warp owns 16 query rows, a thread rows g and g + 8 (`row` is the query index of
// row g), columns 8 n + 2 t, + 1 of n8 tile n. Scores in log2 units, online softmax, dropout, the epilogue.
#pragma once
#include <cmath>

#include "common/dtype_traits.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"

namespace memeff {

// O's accumulators and the running max and sum of a thread's two rows before the first key step.
template <int OT>
__device__ __forceinline__ void init_rows(float (&acc_o)[OT][4], float (&m_run)[2], float (&l_run)[2]) {
#pragma unroll
  for (int n = 0; n < OT; ++n) acc_o[n][0] = acc_o[n][1] = acc_o[n][2] = acc_o[n][3] = 0.f;
  m_run[0] = m_run[1] = -INFINITY;
  l_run[0] = l_run[1] = 0.f;
}

// A step without a mask: `plain` steps (every key visible and in bounds, no softcap or ALiBi) only take the
// scale (one test per step: per element, ptxas branched and reloaded the scale 16 times); the others the
// causal / bounds rule in 32-bit compares (masked_logit's rule, as fwd_mma does). kFeat (the feature
// kernels): the window's left side too, and softcap / ALiBi: by ModRule alone on `mods_only` steps
// (tile_mods_only), by masked_logit's rule on the others. kMods = false: a feature kernel built without
// softcap and ALiBi, for calls that have neither (has_score_mods; the launcher's choice).
template <bool kFeat, bool kMods = kFeat, int NT>
__device__ __forceinline__ void scale_unmasked_scores(float (&s)[NT][4], const FwdParams& p, const ScoreCtx& sc,
                                                      bool plain, bool mods_only, float scale_log2, int row, int j0,
                                                      int t, int coff) {
  if (plain) {
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] *= scale_log2;
    return;
  }
  if constexpr (kFeat) {
    if (kMods &&
        mods_only) {  // in view, no mask: softcap / ALiBi alone (ModRule), each loop only where the call has it
      const ModRule rule(p, sc, row, j0 + 2 * t);
      if (rule.cap) {
        rule.tanh_args<true>(s, s);  // in place (registers: the d64 wgmma kernel runs at its 128)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[n][e] *= rule.softcap;
      } else {
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[n][e] *= rule.scale_log2;
      }
      if (rule.alibi) {
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            s[n][e] = rule.add_alibi(s[n][e], static_cast<float>(8 * (e / 2) - 8 * n - (e % 2)));
      }
    } else if (kMods && has_score_mods(p)) {
      const MaskView none{nullptr, 0, 0, MaskKind::kNone, kF32};
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = row + 8 * (e / 2), j = j0 + n * 8 + 2 * t + (e % 2);
          s[n][e] = masked_logit<true, true>(p, none, sc, i, j, s[n][e]) * kLog2e;
        }
    } else {
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = row + 8 * (e / 2), j = j0 + n * 8 + 2 * t + (e % 2);
          s[n][e] = sc.kb.visible(i, j) ? s[n][e] * scale_log2 : -INFINITY;
        }
    }
    return;
  }
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row + 8 * (e / 2), j = j0 + n * 8 + 2 * t + (e % 2);
      s[n][e] = (i < p.seq_q && j < p.seq_k && j <= i + coff) ? s[n][e] * scale_log2 : -INFINITY;
    }
}

// The mask terms of a thread's scores of one step, read from global memory ahead of Q.K^T (the wgmma
// forward has no room for a staged mask tile): the bias values, or 0 / -inf for a boolean mask. Elements
// out of bounds are not read.
template <int NT>
__device__ __forceinline__ void load_mask_terms(float (&mv)[NT][4], const FwdParams& p, const MaskView& m, int row,
                                                int j0, int t) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row + 8 * (e / 2), j = j0 + n * 8 + 2 * t + (e % 2);
      float v = 0.f;
      if (i < p.seq_q && j < p.seq_k) {
        const int64_t off = i * m.stride_i + j * m.stride_j;
        v = m.kind == MaskKind::kAdditive ? load_any_float(m.base, m.dtype, off)
                                          : (static_cast<const uint8_t*>(m.base)[off] ? 0.f : -INFINITY);
      }
      mv[n][e] = v;
    }
}

// Scores of a masked step in log2 units with the terms of load_mask_terms: masked_logit's rule (bounds,
// causal, a false entry) and one FFMA per kept score, as add_mask_rows. kFeat: the window's left side, softcap
// and ALiBi too (modded_score).
template <bool kFeat, int NT>
__device__ __forceinline__ void apply_mask_terms(float (&s)[NT][4], const float (&mv)[NT][4], const FwdParams& p,
                                                 const ScoreCtx& sc, int row, int j0, int t, int coff) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row + 8 * (e / 2), j = j0 + n * 8 + 2 * t + (e % 2);
      const bool vis = kFeat ? sc.kb.visible(i, j) : (i < p.seq_q && j < p.seq_k && j <= i + coff);
      const bool keep = vis && mv[n][e] != -INFINITY;
      float dcap;
      s[n][e] = !keep   ? -INFINITY
                : kFeat ? (modded_score<true>(p, sc, i, j, s[n][e], dcap) + mv[n][e]) * kLog2e
                        : fmaf(s[n][e], p.scale, mv[n][e]) * kLog2e;
    }
}

// Online softmax of one step's scores (rows g and g + 8; the quad shares a row): the running max and sum
// move on, `alpha` is what O's rows are to be multiplied by, and the scores become probabilities.
template <int NT>
__device__ __forceinline__ void online_softmax(float (&s)[NT][4], float (&m_run)[2], float (&l_run)[2],
                                               float (&alpha)[2]) {
  float m_use[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_run[r], mx);
    m_use[r] = m_new == -INFINITY ? 0.f : m_new;
    alpha[r] = exp2_ftz(m_run[r] - m_use[r]);  // one MUFU (attn/fast_math.h)
    m_run[r] = m_new;
    l_run[r] *= alpha[r];
  }
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float pe = exp2_ftz(s[n][e] - m_use[e / 2]);
      l_run[e / 2] += pe;
      s[n][e] = pe;
    }
}

// Dropout on one step's probabilities (after they joined the row sums, as the reference does).
template <int NT>
__device__ __forceinline__ void drop_probabilities(float (&s)[NT][4], const FwdParams& p, int b, int h, int row, int j0,
                                                   int t) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      bool k0, k1;
      dropout_kept_pair(p, b, h, row + 8 * r, j0 + n * 8 + 2 * t, k0, k1);
      s[n][2 * r] = k0 ? s[n][2 * r] * p.dropout_keep_scale : 0.f;
      s[n][2 * r + 1] = k1 ? s[n][2 * r + 1] * p.dropout_keep_scale : 0.f;
    }
}

// The row sums over the quad and their reciprocals; logsumexp per row (fully masked rows: out 0, lse -inf).
__device__ __forceinline__ void finish_rows(const FwdParams& p, const float (&m_run)[2], const float (&l_run)[2],
                                            float (&inv)[2], int b, int h, int row, int t) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = row_inv_sum(l);
    const int i = row + 8 * r;
    if (t == 0 && i < p.seq_q) {
      p.lse[lse_row(p, b, h, i)] = row_lse(m_run[r], l);
    }
  }
}

// O's rows, normalized, with float2 stores straight from the accumulators (a quad writes 32 contiguous bytes).
template <int OT>
__device__ __forceinline__ void store_rows(const FwdParams& p, const float (&acc_o)[OT][4], const float (&inv)[2],
                                           int b, int h, int row, int t) {
  float* out = static_cast<float*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row + 8 * r;
    if (i >= p.seq_q) continue;
#pragma unroll
    for (int n = 0; n < OT; ++n) {
      const int d = n * 8 + 2 * t;
      if (d < p.head_dim_v) {  // head_dim_v is a multiple of 4, d even: d + 1 is in range too
        *reinterpret_cast<float2*>(out + i * p.o_stride[2] + d) =
            make_float2(acc_o[n][2 * r] * inv[r], acc_o[n][2 * r + 1] * inv[r]);
      }
    }
  }
}

}  // namespace memeff
