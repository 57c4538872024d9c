// The two warp-level GEMMs of one key tile, with shared-memory fragments software-pipelined one step
// ahead (FA2 / CUTLASS style): the ldmatrix for step i+1 is issued before the mma.sync of step i, so
// the ~30-cycle ldmatrix latency hides behind tensor-core work instead of stalling every k-step. The
// loops are fully unrolled: every buffer index is a compile-time constant and stays in registers.
// (ptxas schedules the unrolled loads this way on its own too: registers and spills were the same with
// the look-ahead removed. Writing it out keeps the intent visible and independent of that heuristic.)
//
//   S (+)= Q . K^T   A = Q (registers, or ldmatrix from the swizzled Q tile), B = K (ldmatrix)
//   O (+)= P . V     A = P (the S accumulators packed to 16 bits, in registers), B = V (ldmatrix.trans)
#pragma once
#include <cstdint>

#include "common/kernel_traits.h"
#include "attn/convert.h"
#include "attn/ptx.h"

namespace attn::flash {

// q_frag is used when Tr::kQInRegs; otherwise Q fragments come from shared memory through lq, one
// k-step ahead. q_row0: the warp's first Q row in the tile (warp * 16).
template <typename Tr, typename QFrag, typename LQ, typename LK>
__device__ __forceinline__ void gemm_qk(float (&s)[Tr::kMTiles][Tr::kNTiles][4], const QFrag& q_frag, const LQ& lq,
                                        const LK& lk, int q_row0) {
  using E = typename Tr::Element;
  constexpr int kMT = Tr::kMTiles, kNP = Tr::kNTiles / 2, kKS = Tr::kKSteps, kW = Tr::kNWarps;
  constexpr int kSteps = kKS * kNP;  // one step: one ldmatrix.x4 of K (two n8 tiles, one k16 slice)
  uint32_t a[Tr::kQInRegs ? 1 : 2][kMT][4];
  uint32_t bk[2][4];
  auto a_frag = [&](int mi, int ks) -> const uint32_t (&)[4] {
    if constexpr (Tr::kQInRegs)
      return q_frag[mi][ks];
    else
      return a[ks & 1][mi];
  };
  if constexpr (!Tr::kQInRegs) {
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi) ldmatrix_x4(a[0][mi], lq.at(q_row0 + mi * 16 * kW, 0));
  }
  ldmatrix_x4(bk[0], lk.at(0, 0));
#pragma unroll
  for (int ks = 0; ks < kKS; ++ks) {
    if constexpr (!Tr::kQInRegs) {
      if (ks + 1 < kKS) {
#pragma unroll
        for (int mi = 0; mi < kMT; ++mi) ldmatrix_x4(a[(ks + 1) & 1][mi], lq.at(q_row0 + mi * 16 * kW, (ks + 1) * 2));
      }
    }
#pragma unroll
    for (int np = 0; np < kNP; ++np) {
      const int i = ks * kNP + np;
      if (i + 1 < kSteps) ldmatrix_x4(bk[(i + 1) & 1], lk.at(((i + 1) % kNP) * 16, ((i + 1) / kNP) * 2));
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
        const uint32_t (&am)[4] = a_frag(mi, ks);
        mma_16816<E>(s[mi][2 * np], am, bk[i & 1][0], bk[i & 1][1]);
        mma_16816<E>(s[mi][2 * np + 1], am, bk[i & 1][2], bk[i & 1][3]);
      }
    }
  }
}

// O += P . V with P = s (probabilities, float) packed to the element type k16 slice by k16 slice.
template <typename Tr, typename LV>
__device__ __forceinline__ void gemm_pv(float (&acc_o)[Tr::kMTiles][Tr::kDTiles][4],
                                        const float (&s)[Tr::kMTiles][Tr::kNTiles][4], const LV& lv) {
  using E = typename Tr::Element;
  constexpr int kMT = Tr::kMTiles, kDP = Tr::kDTiles / 2, kPS = Tr::kPSteps;
  constexpr int kSteps = kPS * kDP;  // one step: one ldmatrix.x4.trans of V (two n8 tiles of D, one k16 slice)
  uint32_t bv[2][4];
  ldmatrix_x4_trans(bv[0], lv.at(0, 0));
#pragma unroll
  for (int ps = 0; ps < kPS; ++ps) {
    uint32_t a[kMT][4];
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi) {  // the S accumulator layout is the A operand layout of the next mma
      a[mi][0] = pack2<E>(s[mi][2 * ps][0], s[mi][2 * ps][1]);
      a[mi][1] = pack2<E>(s[mi][2 * ps][2], s[mi][2 * ps][3]);
      a[mi][2] = pack2<E>(s[mi][2 * ps + 1][0], s[mi][2 * ps + 1][1]);
      a[mi][3] = pack2<E>(s[mi][2 * ps + 1][2], s[mi][2 * ps + 1][3]);
    }
#pragma unroll
    for (int dp = 0; dp < kDP; ++dp) {
      const int i = ps * kDP + dp;
      if (i + 1 < kSteps) ldmatrix_x4_trans(bv[(i + 1) & 1], lv.at(((i + 1) / kDP) * 16, ((i + 1) % kDP) * 2));
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
        mma_16816<E>(acc_o[mi][2 * dp], a[mi], bv[i & 1][0], bv[i & 1][1]);
        mma_16816<E>(acc_o[mi][2 * dp + 1], a[mi], bv[i & 1][2], bv[i & 1][3]);
      }
    }
  }
}

}  // namespace attn::flash
