// The per-step pieces that both tensor-core backward kernels share (bwd_mma.cuh: fp16/bf16; bwd_tf32.cuh:
// fp32 on 3xTF32): which query blocks and heads a key block walks, the step's lse / D rows and mask tile,
// P and dS from the S^T and dP^T fragments (with the mask, dropout, the dbias writes and the GQA presum),
// and the dK / dV epilogue. Both kernels hold S^T and dP^T in the m16n8 accumulator layout (a warp's 16
// keys as rows g and g + 8, queries 2t and 2t + 1 of each n8 tile as columns), so these pieces are the
// same code for both (moved here from bwd_mma.cuh).
#pragma once
#include <cmath>
#include <type_traits>

#include "bwd/bwd_lean.cuh"
#include "bwd/dkdv_store.cuh"
#include "common/dbias_store.cuh"
#include "common/dtype_traits.cuh"
#include "common/mask_tile.cuh"
#include "common/toolkit.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"

namespace memeff {

// A key block's walk: (query head of the GQA group, query block of this split), heads outer (inner
// with dbias_presum), M queries per step, over the query blocks that see a key of [j0, j0 + N) (none past
// sequsedK's keys; kFeat: the feature kernels', which have a left bound and sequsedK to look at).
template <int M, int N, bool kMask, bool kFeat>
struct BwdSteps {
  const BwdParams& p;
  int hk, split, q_first, per_head, steps, rot;
  bool presum;
  __device__ __forceinline__ BwdSteps(const BwdParams& params, int bhk, int hk_, int j0, int split_)
      : p(params), hk(hk_), split(split_) {
    q_first = query_begin_for_key(p, j0) / M;
    const int q_end = !kFeat ? p.seq_q : j0 < p.seq_k ? query_end_for_key(p, min(j0 + N, p.seq_k) - 1) : 0;
    const int q_blocks = (q_end + M - 1) / M;
    per_head = q_first + split < q_blocks ? (q_blocks - q_first - split + p.query_splits - 1) / p.query_splits : 0;
    steps = per_head * p.group;
    // BwdParams::dbias_stagger: each (b, kv head) starts its query walk at its own offset, so blocks of
    // different heads that run side by side (same key block, same start) add into different dbias rows
    // instead of the same sectors at the same time. Neighbouring heads are 4 steps apart: never in one
    // step's rows, yet close enough that a line they share is still in L2 when the next one adds (the
    // accumulator, 64 MB per batch at S4k, does not fit). The same steps in another order. Only with a
    // dbias, hence a mask: the mask-free kernels compile it out.
    rot = kMask && p.dbias_stagger && per_head > 0 ? static_cast<int>((static_cast<int64_t>(bhk) * 4) % per_head) : 0;
    // With dbias_presum (a mask kernel only: it needs a dbias) the group's heads are the inner walk.
    presum = kMask && p.dbias_presum;
  }
  __device__ __forceinline__ int head(int s) const { return hk * p.group + (presum ? s % p.group : s / per_head); }
  __device__ __forceinline__ int row0_of(int r0) const {  // first query of walk position r0 (rotated by the stagger)
    const int r = r0 + rot;
    return (q_first + split + (r < per_head ? r : r - per_head) * p.query_splits) * M;
  }
  __device__ __forceinline__ int row0(int s) const { return row0_of(presum ? s / p.group : s % per_head); }
};

// A step's lse (log2 units) and D rows into shared memory (threads 0..M-1); padded rows get lse = -inf.
template <int M>
__device__ __forceinline__ void load_step_rows(const BwdParams& p, int b, int h, int i0, float* lse_b, float* dsum_b) {
  if (threadIdx.x < M) {
    const int i = i0 + threadIdx.x;
    const int64_t row = lse_row(p, b, h, i);
    lse_b[threadIdx.x] = i < p.seq_q ? p.lse[row] * kLog2e : -INFINITY;
    dsum_b[threadIdx.x] = i < p.seq_q ? p.dsum[row] : 0.f;
  }
}

// The step's mask tile into `tile` by cp.async where this mask can be staged; returns whether it was.
template <int M, int N, int kThreads, bool kMask>
__device__ __forceinline__ bool stage_step_mask(const BwdParams& p, int b, int h, int i0, int j0, unsigned char* tile) {
  const MaskView mv = mask_view(p, b, h);
  const bool staged = kMask && mask_tile_ok(mv);
  if (staged) {
    if (i0 + M <= p.seq_q && j0 + N <= p.seq_k) {
      load_mask_tile_interior<M, N, kThreads>(tile, mv, i0, j0);
    } else {
      load_mask_tile_async<M, N, kThreads>(tile, mv, i0, j0, p.seq_q, p.seq_k);
    }
  }
  return staged;
}

// Where a step is: batch, query head, first query and key, this warp's 16 keys (warp * 16) and lane, the
// query head's place in its GQA group (for dbias_presum), and whether this warp sends dS to dbias (where
// two warps hold the same fragment, bwd_tf32's kDSplit, one of them does).
struct BwdStepAt {
  int b, h, i0, j0, warp, lane, gh;
  bool dbias_owner;
};

// P^T, dropout, dS^T = P^T * (dP^T * keep / (1 - p) - D) for a warp's [16 keys][QT * 8 queries]: acc_st
// (S^T = K Q^T, unscaled) becomes Pd^T, acc_dpt (dP^T) dS^T times the softcap derivative (the gradient of
// scale * q.k, which dK and dQ take); dS itself goes to dbias where the call has one.
// mask_smem: the step's mask tile was staged at maskb_s. lse_b, dsum_b: the step's rows (load_step_rows).
// presum_slot: this thread's dbias_presum slots (QT * 4 floats, kThreads apart). kFeat: the feature kernel
// (softcap and ALiBi by masked_logit's rule, sc: this head's ScoreCtx); kMods = false: one built without
// softcap and ALiBi, for calls that have neither (has_score_mods).
template <typename T, int M, int N, int kThreads, bool kMask, bool kFeat, bool kMods = kFeat, int QT>
__device__ __forceinline__ void bwd_step_p_ds(const BwdParams& p, const BwdStepAt& at, const MaskView& mask,
                                              const ScoreCtx& sc, bool mask_smem, const unsigned char* maskb_s,
                                              float* presum_slot, const float* lse_b, const float* dsum_b,
                                              float (&acc_st)[QT][4], float (&acc_dpt)[QT][4]) {
  constexpr bool kAccurate = std::is_same_v<T, float>;
  const int b = at.b, h = at.h, i0 = at.i0, j0 = at.j0, warp = at.warp, lane = at.lane, gh = at.gh, g = lane / 4,
            t = lane % 4;
  const bool interior = i0 + M <= p.seq_q && j0 + N <= p.seq_k;  // every row and key of the step in bounds
  const bool plain = tile_unmasked<kFeat>(p, i0, M, j0, N);
  // As the forward (mask_tile.cuh): on a step whose keys are all in bounds and visible from
  // every query, S^T becomes dot * scale + mask term in place, one LDS and one FFMA per score
  // instead of tile_logit's rules and dtype switch (padded rows are skipped below by lse = -inf).
  const bool mask_fast = mask_smem && tile_keys_visible<kFeat>(p, i0, M, j0, N);
  float ds[QT][4];  // dS (dbias); acc_dpt ends as dS times the softcap derivative
  if (mask_fast) {
    with_mask_dtype<T>(p.mask_dtype, [&](auto dt) {  // = mask.dtype
      constexpr int kDt = decltype(dt)::value;
      if constexpr (kDt == kBF16 || kDt == kF16) {
        {  // QT / 2 ldmatrix.trans instead of 4 * QT 16-bit loads (bwd_lean.cuh)
          uint32_t mf[QT][2];
          load_mask_frag16<MaskTile<M, N>::kPitch, QT>(mf, maskb_s, warp, lane);
#pragma unroll
          for (int n = 0; n < QT; ++n)
#pragma unroll
            for (int kh = 0; kh < 2; ++kh) {
              const float2 m = unpack_mask16<kDt>(mf[n][kh]);
              acc_st[n][2 * kh] = fmaf(acc_st[n][2 * kh], p.scale, m.x);
              acc_st[n][2 * kh + 1] = fmaf(acc_st[n][2 * kh + 1], p.scale, m.y);
            }
          return;
        }
      }
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int il = n * 8 + 2 * t + (e % 2), jl = warp * 16 + g + 8 * (e / 2);
          acc_st[n][e] = fmaf(acc_st[n][e], p.scale, mask_one<kDt>(maskb_s + il * MaskTile<M, N>::kPitch, jl));
        }
    });
  }
  if (!p.dropout && kMods && tile_mods_only<kFeat>(p, i0, M, j0, N)) {
    // In view and unmasked with softcap or ALiBi: ModRule's logit per score (no bounds, no mask, no
    // int-to-float conversion), then the lean loop's P and dS. The feature kernels are built with kMask
    // (they take masks too), so whether this call has a mask is tile_mods_only's run-time test, not kMask. Element (n, e) is query i0 + 2t + n8 + e%2
    // and key j0 + 16 warp + g + 8 (e / 2): its distance is the thread's first plus 8n + e%2 - 8 (e / 2).
    const ModRule rule(p, sc, i0 + 2 * t, j0 + warp * 16 + g);
    if (!rule.cap) {
      // ALiBi alone (dcap = 1): the plain loop plus one FADD and one FFMA per score. The bias and -lse meet
      // in one FMA (they are large and of the same size at long distances, so they cancel there exactly),
      // then dot * scale is added: exp2(dot * scale - (slope |base + c| + lse)).
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int il = n * 8 + 2 * t + (e % 2);
          const float lse2 = lse_b[il];
          const float c = static_cast<float>(8 * n + (e % 2) - 8 * (e / 2));
          const float pr = prob_of_exponent(fmaf(acc_st[n][e], rule.scale_log2, rule.add_alibi(-lse2, c)), lse2);
          acc_dpt[n][e] = attn::softmax_grad(pr, acc_dpt[n][e], dsum_b[il]);
          ds[n][e] = acc_dpt[n][e];
          acc_st[n][e] = pr;
        }
    } else {
      // Softcap (and ALiBi where the call has it: the loop is built with and without it). The logit is
      // softcap * th, its derivative 1 - th^2; th replaces S^T in place.
      float (&th)[QT][4] = acc_st;
      rule.tanh_args<kAccurate>(acc_st, th);
      auto p_ds = [&](auto with_alibi) {
#pragma unroll
        for (int n = 0; n < QT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int il = n * 8 + 2 * t + (e % 2);
            const float lse2 = lse_b[il];
            float logit2 = rule.softcap * th[n][e];
            if constexpr (decltype(with_alibi)::value)
              logit2 = rule.add_alibi(logit2, static_cast<float>(8 * n + (e % 2) - 8 * (e / 2)));
            const float pr = prob_of_logit2(logit2, lse2);
            ds[n][e] = attn::softmax_grad(pr, acc_dpt[n][e], dsum_b[il]);
            acc_dpt[n][e] = ds[n][e] * attn::softcap_grad(th[n][e]);
            acc_st[n][e] = pr;
          }
      };
      if (rule.alibi) {
        p_ds(std::true_type{});
      } else {
        p_ds(std::false_type{});
      }
    }
  } else if (!p.dropout && (mask_fast || plain)) {
    // The general loop's P and dS without the per-element rules (none apply on these steps) and without a
    // branch per score: a padded or fully masked row (lse = -inf) selects P = 0 after the exp2. With
    // keep = 1 the general loop's acc * keep - D and P * keep are these values exactly.
    const float sl2 = mask_fast ? kLog2e : p.scale * kLog2e;
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int il = n * 8 + 2 * t + (e % 2);
        const float pr = prob_of_logit2(acc_st[n][e] * sl2, lse_b[il]);
        acc_dpt[n][e] = attn::softmax_grad(pr, acc_dpt[n][e], dsum_b[il]);
        ds[n][e] = acc_dpt[n][e];
        acc_st[n][e] = pr;
      }
  } else if (!p.dropout && p.mask_kind == MaskKind::kNone && !(kMods && has_score_mods(p))) {
    // Only the causal / window bounds cut this step (a window's edge, the diagonal, the sequence ends):
    // the plain loop's P and dS with the visibility test as a select, instead of masked_logit's rules
    // (an invisible score gives P = 0, as its -inf logit would).
    const float sl2 = p.scale * kLog2e;
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int il = n * 8 + 2 * t + (e % 2);
        // prob_of_logit2's select with the visibility test joined to the row's (routed through the helper, the
        // test's short circuit became a float select: other code, one register less in the d64 fp32 feature kernel).
        const float lse2 = lse_b[il];
        const float x = exp2f(acc_st[n][e] * sl2 - lse2);
        const bool seen = lse2 != -INFINITY && sc.kb.visible(i0 + il, j0 + warp * 16 + g + 8 * (e / 2));
        const float pr = seen ? x : 0.f;
        acc_dpt[n][e] = attn::softmax_grad(pr, acc_dpt[n][e], dsum_b[il]);
        ds[n][e] = acc_dpt[n][e];
        acc_st[n][e] = pr;
      }
  } else {
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int il = n * 8 + 2 * t + (e % 2), i = i0 + il;
        const int j = j0 + warp * 16 + g + 8 * (e / 2);
        const float lse2 = lse_b[il];
        float pr = 0.f, dcap = 1.f;
        if (lse2 != -INFINITY) {  // padded and fully masked rows: P = 0
          const float logit2 =
              mask_fast ? acc_st[n][e] * kLog2e
              : plain   ? acc_st[n][e] * (p.scale * kLog2e)
              : mask_smem
                  ? tile_logit<M, N, kMods, kAccurate>(p, mask, sc, maskb_s, i, j, il, j - j0, acc_st[n][e], dcap) *
                        kLog2e
                  : masked_logit<kMods, kAccurate>(p, mask, sc, i, j, acc_st[n][e], dcap) * kLog2e;
          pr = prob_of_logit2(logit2, lse2);
        }
        float keep = 1.f;
        if (p.dropout) keep = (i < p.seq_q && j < p.seq_k && dropout_kept(p, b, h, i, j)) ? p.dropout_keep_scale : 0.f;
        ds[n][e] = attn::softmax_grad(pr, acc_dpt[n][e] * keep, dsum_b[il]);
        acc_dpt[n][e] = kMods ? ds[n][e] * dcap : ds[n][e];
        acc_st[n][e] = pr * keep;
      }
  }
  // A dbias needs an additive mask (dispatch.cu), so the mask-free kernels compile this out.
  // Presum: ds is this head's dS plus the group's earlier heads' (kept in this thread's smem slots);
  // every head but the group's last stores it back and sends nothing.
  bool send = at.dbias_owner;
  if (kMask && p.dbias_presum && send) {
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (gh > 0) ds[n][e] += presum_slot[(n * 4 + e) * kThreads];
        if (gh + 1 < p.group) presum_slot[(n * 4 + e) * kThreads] = ds[n][e];
      }
    send = gh + 1 == p.group;
  }
  if (kMask && send && p.dbias != nullptr && p.dbias_quads) {
    // 4 adjacent keys per request. Query tiles 2m, 2m + 1 and key half kh of the fragment are a
    // 4 x 4 block per group of 4 lanes (lanes 4 apart: rows 2t, 2t + 1, 8 + 2t, 9 + 2t, keys
    // g & ~3 .. + 3); after transpose_keys4 this lane holds row c = g % 4 of it, keys 0..3.
    static_assert(QT % 2 == 0, "query tiles come in pairs");
    const int c = g & 3;
    // fn(m, kh, x): this lane's 4 keys of quad (m, kh), transposed.
    auto for_quads = [&](auto&& fn) {
#pragma unroll
      for (int m = 0; m < QT / 2; ++m)
#pragma unroll
        for (int kh = 0; kh < 2; ++kh) {
          float x[4] = {ds[2 * m][2 * kh], ds[2 * m][2 * kh + 1], ds[2 * m + 1][2 * kh], ds[2 * m + 1][2 * kh + 1]};
          transpose_keys4(x, c);
          fn(m, kh, x);
        }
    };
    if (p.dbias_accum != nullptr && interior) {
      // Every quad of the step in bounds: one 64-bit row address per step, + 16 rows / + 8 keys
      // per quad, and the reduction without write_dbias4's per-quad checks. Same adds, same addresses.
      float* q0 = p.dbias_accum + (b * p.dbias_stride[0] + h * p.dbias_stride[1] +
                                   static_cast<int64_t>(i0 + (c >> 1) * 8 + 2 * t + (c & 1)) * p.dbias_stride[2] + j0 +
                                   warp * 16 + (g & ~3));
      const int64_t rows16 = 16 * p.dbias_stride[2];
      for_quads(
          [&](int m, int kh, const float (&x)[4]) { red_add_f32x4(q0 + m * rows16 + 8 * kh, x[0], x[1], x[2], x[3]); });
    } else {
      for_quads([&](int m, int kh, const float (&x)[4]) {
        const int i = i0 + (2 * m + (c >> 1)) * 8 + 2 * t + (c & 1), j = j0 + warp * 16 + (g & ~3) + 8 * kh;
        if (i < p.seq_q && j < p.seq_k) {
          write_dbias4(p, b * p.dbias_stride[0] + h * p.dbias_stride[1] + i * p.dbias_stride[2] + j, x, p.seq_k - j);
        }
      });
    }
  } else if (kMask && send &&
             p.dbias != nullptr) {  // every (b, h, i, j) is visited once: a store, or an add over b / h
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = i0 + n * 8 + 2 * t + (e % 2), j = j0 + warp * 16 + g + 8 * (e / 2);
        if (i < p.seq_q && j < p.seq_k) {
          const int64_t idx =
              b * p.dbias_stride[0] + h * p.dbias_stride[1] + i * p.dbias_stride[2] + j * p.dbias_stride[3];
          write_dbias(p, idx, ds[n][e]);
        }
      }
  }
}

// dK (scaled) and dV of a warp's 16 keys from its accumulators (m16n8 layout): into dk / dv, or into
// this split's fp32 partials when the query range is split.
// d0: the head-dim column of the accumulators' first tile; d_end: the first column this block does not own.
template <typename T, int DT>
__device__ __forceinline__ void store_dk_dv(const BwdParams& p, const float (&acc_dk)[DT][4],
                                            const float (&acc_dv)[DT][4], int b, int hk, int j0, int warp, int lane,
                                            int split, int d0 = 0, int d_end = 1 << 30) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = j0 + warp * 16 + g + 8 * (e / 2), d = d0 + n * 8 + 2 * t + (e % 2);
      if (j >= p.seq_k_rows || d >= d_end) continue;  // d_end: where the next column block's columns start
      const float gk = acc_dk[n][e] * p.scale, gv = acc_dv[n][e];
      store_dkdv_element<T>(p, b, hk, j, d, split, gk, gv);
    }
}

}  // namespace memeff
