// The fp32 backward's softcap step with its score work ahead of dP^T (bwd_tf32's kSoftcap form, d64, for calls
// with a softcap and no ALiBi or mask). bwd_step_p_ds takes tanh, P and dS after both products, and a branch
// (tanh_args's test) sits between them, so its ~14 instructions per score run after dP^T's mma with nothing
// to overlap. Here tanh and P are taken between S^T's and dP^T's products without a branch, so that the
// compiler schedules them under dP^T's mma; only dS (as the plain loop's, plus the derivative) is left after.
// Same operations on the same values as bwd_step_p_ds's softcap loop: the same bits.
#pragma once
#include <cmath>

#include "common/params.h"
#include "common/score_mods.cuh"

namespace memeff {

template <int QT>
struct SoftcapAhead {
  float th[QT][4];     // tanh(dot * softcap_in)
  float pr[QT][4];     // P
  bool ready = false;  // th and P hold this step's values; otherwise bwd_step_p_ds takes the step

  // From S^T (acc_st, unscaled dots, the m16n8 accumulator layout: element (n, e) is query row
  // n * 8 + 2t + e % 2 of lse_b). take: the step is one of bwd_step_p_ds's softcap loop (in view, unmasked, no
  // dropout; warp-uniform). Ready where it is and every argument of the warp is below kTanhPolyLimit: then th is
  // tanh_poly's (tanhf's bits, as ModRule::tanh_args) and P the loop's. Both are evaluated either way.
  __device__ __forceinline__ void take(const float (&acc_st)[QT][4], const BwdParams& p, const float* lse_b, int t,
                                       bool take_step) {
    const float softcap_log2 = p.softcap * kLog2e;
    bool small = true;
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = acc_st[n][e] * p.softcap_in;
        small &= fabsf(x) < kTanhPolyLimit;
        th[n][e] = tanh_poly(x);
        pr[n][e] = prob_of_logit2(softcap_log2 * th[n][e], lse_b[n * 8 + 2 * t + (e % 2)]);
      }
    ready = __all_sync(0xffffffffu, small) && take_step;
  }

  // acc_dpt (dP^T) becomes dS^T times the softcap derivative 1 - th^2, acc_st P^T: the loop's last lines.
  __device__ __forceinline__ void finish(float (&acc_st)[QT][4], float (&acc_dpt)[QT][4], const float* dsum_b,
                                         int t) const {
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float ds = attn::softmax_grad(pr[n][e], acc_dpt[n][e], dsum_b[n * 8 + 2 * t + (e % 2)]);
        acc_dpt[n][e] = ds * attn::softcap_grad(th[n][e]);
        acc_st[n][e] = pr[n][e];
      }
  }
};

}  // namespace memeff
