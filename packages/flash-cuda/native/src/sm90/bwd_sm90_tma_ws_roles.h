// The consumer warpgroups of the TMA warp-specialized dK/dV kernel at D 256 (bwd_sm90_tma_ws_traits.h, kRoles):
// the cp.async kernel's D256 body (flash_bwd_sm90_roles_kernel.h: 64 keys, the warpgroups split by role) fed by
// the producer warpgroup's Q / dO ring (flash_bwd_sm90_tma_ws_kernel.h). Per (query head, query block) pair:
//   warpgroup 0                                   warpgroup 1
//   wait 'full' of the pair's stage               the same
//   S^T = K.Q^T (wgmma, 16 k16 steps)             dP^T = V.dO^T
//   S^T -> shared memory (fp32), arrive           wait for S^T
//   P                                             dS from S^T and dP^T; dS^T -> shared memory
//   dV += P^T.dO (A = P^T from registers)         dK += dS^T.Q
//   ------------------ consumer barrier: dS^T complete, S^T read ------------------
//   dQ columns 0..127 = dS.K                      dQ columns 128..255   (passes of 64; fp32 atomics)
//   'empty' of the stage once dV / dK (its last readers) are done: every consumer thread arrives
// The barrier also orders warpgroup 1's S^T reads and warpgroup 0's dQ reads of dS^T before the next pair's
// writes of either (both buffers are single). Deterministic mode (p.dq_accum null): no dQ part, the dQ kernel
// runs after this one.
#pragma once
#include <cstdint>

#include "attn/barriers.h"
#include "attn/ptx.h"
#include "bwd/bwd_scores.h"
#include "bwd/flash_bwd_kernel.h"
#include "common/bwd_params.h"
#include "sm90/bwd_sm90_pair.h"
#include "sm90/bwd_sm90_tma_ws_common.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash::sm90 {

// Runs after setmaxnreg raised the consumers' registers; `first` is the kernel's pair walk (every role walks it
// alike), `pairs` its length, j0 the CTA's first key, off the causal offset.
template <typename Tr>
__device__ __forceinline__ void tma_ws_roles_consumers(const BwdTmaArgs& a, const TmaWsSmem<Tr>& sm, const BwdSeq& sq,
                                                       int b, int hk, int j0, int off, PairWalk first, int pairs) {
  using E = typename Tr::Element;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kD = Tr::kHeadDim, kStages = Tr::kStages;
  constexpr int kQT = Tr::kQTiles, kMS = Tr::kMSteps, kDT = Tr::kDTiles, kDqT = Tr::kDqTiles;
  constexpr int kConsumers = Tr::kNThreads, kWgThreads = 128;
  constexpr int kConsumerBar = 1, kSReadyBar = 4;  // the kernel's other named barriers (2, 3) are unused here
  constexpr uint32_t kStageUnits = TmaWsSmem<Tr>::kStageElems * 2 / 16;  // descriptor units (16 bytes)
  constexpr uint32_t kDoUnits = Tr::kSmemQElems * 2 / 16;
  static_assert(Tr::kRoles && kN == 64, "one warpgroup's 64 keys per CTA");
  const BwdParams& p = a.p;
  const FwdParams& f = p.f;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2;  // the role: 0 = S, P, dV; 1 = dP, dS, dK
  const int wt = tid & (kWgThreads - 1);
  const int kw = warp & 3;  // keys 16 kw .. 16 kw + 15 of the block, in both warpgroups

  // Descriptors at stage 0 and the first k16 step (as flash_bwd_sm90_roles_kernel.h): the role's A (K or V, all
  // 64 rows) and B (Q or dO) for S^T / dP^T, K-major; its B for dV / dK (dO or Q), MN-major; dS^T for dQ.
  const uint64_t desc_a = make_desc(smem_addr(wg == 0 ? sm.k : sm.v), 16, 1024);
  const uint32_t role_units = wg == 0 ? 0u : kDoUnits;  // Q (S^T, dK) or dO (dP^T, dV) in a stage
  const uint64_t desc_b = make_desc(smem_addr(sm.q0), 16, 1024) + role_units;
  const uint64_t desc_b_mn = make_desc(smem_addr(sm.q0), kM * 128, 1024) + (kDoUnits - role_units);
  const uint64_t desc_ds = make_desc(smem_addr(sm.ds0), kN * 128, 1024);

  float acc[kDT][4];  // dV (warpgroup 0) or dK (warpgroup 1)
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[dt][e] = 0.f;

  const BwdRowCtx rc{off, sq.seq_k, 0.f, 0u};  // no ALiBi or dropout here (tma_ws_declines)
  if (pairs > 0) ws_wait(sm.kv, 0, "K/V loads", 0);
  PairWalk cur = first;
  int stage = 0;
  uint32_t phase = 0;

#pragma unroll 1
  for (int k = 0; k < pairs; ++k, cur.next()) {
    const int i0 = cur.m * kM;
    ws_wait(sm.full + 8 * stage, phase, "full (consumer)", k);
    const float* lse_s = sm.lse + stage * kM;
    const float* dsum_s = sm.dsum + stage * kM;
    const uint32_t st_units = stage * kStageUnits;
    const bool plain = plain_tile(f, rc, i0, kM, j0, kN);

    // ---- S^T (warpgroup 0) or dP^T (warpgroup 1)
    float x[kQT][4];
    fence_operands(x);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks)
      Wgmma<E, kM>::template ss<0>(x, desc_a + kstep(ks, kN), desc_b + st_units + kstep(ks, kM), ks > 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(x);

    // ---- P (warpgroup 0) or dS (warpgroup 1) into x; element (nt, e): key row 16 kw + g + 8 (e / 2), query
    // column nt * 8 + 2t + e % 2. A boundary tile applies the causal / window band and the key tail.
    auto for_elements = [&](auto&& fn) {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt) {
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
        const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + kw * 16 + g + 8 * (e >> 1);
          const int64_t diag = int64_t(i0 + nt * 8 + 2 * t + (e & 1)) + off;
          const bool visible = plain || (j < sq.seq_k && (f.window_right < 0 || j <= diag + f.window_right) &&
                                         (f.window_left < 0 || j >= diag - f.window_left));
          fn(nt, e, visible, (e & 1) ? l2.y : l2.x, (e & 1) ? d2.y : d2.x);
        }
      }
    };
    if (wg == 0) {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sm.s[(nt * 4 + e) * kWgThreads + wt] = x[nt][e];
      named_barrier_arrive(kSReadyBar, kConsumers);
      for_elements([&](int nt, int e, bool visible, float lse2, float) {
        x[nt][e] = visible ? prob_plain(x[nt][e], lse2, f.score_mul) : 0.f;
      });
    } else {
      named_barrier_sync(kSReadyBar, kConsumers);
      for_elements([&](int nt, int e, bool visible, float lse2, float dsum) {
        const float pr = visible ? prob_plain(sm.s[(nt * 4 + e) * kWgThreads + wt], lse2, f.score_mul) : 0.f;
        x[nt][e] = grad_plain(pr, x[nt][e], dsum);
      });
    }

    // ---- P^T or dS^T as A fragments (k16 step ms: query columns 16ms..16ms+15); dS^T also to shared memory
    uint32_t xa[kMS][4];
    pack_a<Tr>(x, xa);
    const bool dq = p.dq_accum != nullptr;
    if (wg == 1 && dq) store_ds_t<Tr>(sm.ds0, xa, kw * 16, g, t);

    // ---- dV += P^T dO (warpgroup 0) or dK += dS^T Q (warpgroup 1): B MN-major, k16 step = 16 query rows
    fence_operands(acc);
    wgmma_fence();
#pragma unroll
    for (int ms = 0; ms < kMS; ++ms) Wgmma<E, kD>::template rs<1>(acc, xa[ms], desc_b_mn + st_units + ms * 128);
    wgmma_commit();

    named_barrier_sync(kConsumerBar, kConsumers);  // dS^T complete; warpgroup 1 has read S^T
    if (dq) {
      // ---- dQ_m = dS K: this warpgroup's half of the columns, in passes of kDqCols; fp32 atomics
#pragma unroll
      for (int pass = 0; pass < Tr::kDqPasses; ++pass) {
        const int col0 = (wg * Tr::kDqPasses + pass) * Tr::kDqCols;  // a multiple of 64: one column block
        const uint64_t desc_k_mn = make_desc(smem_addr(sm.k) + (col0 / 64) * kN * 128, kN * 128, 1024);
        float dqa[kDqT][4];
        fence_operands(dqa);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < Tr::kDqKSteps; ++ks)
          Wgmma<E, Tr::kDqCols>::template ss<1, 1>(dqa, desc_ds + ks * 128, desc_k_mn + ks * 128, ks > 0);
        wgmma_commit();
        if (pass == 0) {
          wgmma_wait<1>();  // dV / dK: the stage's last readers
          mbar_arrive(sm.empty + 8 * stage);
        }
        wgmma_wait<0>();
        fence_operands(dqa);
        red_dq_rows(p, sq, b, cur.h, i0 + kw * 16, col0, dqa, g, t);
      }
    } else {
      wgmma_wait<0>();
      mbar_arrive(sm.empty + 8 * stage);
    }
    fence_operands(xa);
    fence_operands(acc);
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }

  // ---- epilogue: warpgroup 0 writes dV, warpgroup 1 dK * scale, in the output dtype, from the accumulators
  if (wg == 0)
    store_key_rows<Tr>(p.dv, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride, acc, 1.f, sq, b, hk, j0 + kw * 16,
                       f.head_dim, g, t);
  else
    store_key_rows<Tr>(p.dk, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride, acc, p.scale, sq, b, hk,
                       j0 + kw * 16, f.head_dim, g, t);
}

}  // namespace attn::flash::sm90
