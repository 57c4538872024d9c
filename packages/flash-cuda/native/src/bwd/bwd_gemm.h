// The warp-level GEMMs of the sm80 backward kernels (mma.sync m16n8k16, fragments by ldmatrix from swizzled
// shared tiles through LdsmAddr), one loop nest each, so that the dK/dV, dQ and 2-D kernels issue the same
// instruction order for the same product.
//
//   gemm_pair_nt  S = A1 . B1^T and dP = A2 . B2^T in one k loop, one m16 tile per warp (B K-major)
//   gemm_nt       acc += A . B^T, kTM x kTN tiles per warp (B K-major: ldmatrix)
//   gemm_nn       acc += A . B,   kTM x kTN tiles per warp (B MN-major: ldmatrix.trans)
#pragma once
#include <cstdint>

#include "attn/ptx.h"

namespace attn::flash {

// s = A1 . B1^T, dp = A2 . B2^T over kSteps k16 steps: A's rows a_row.. of la1 / la2, B's n8 tiles from rows
// 0.. of lb1 / lb2. Both products share the k loop (their A fragments are loaded once per step).
template <typename E, int kSteps, int kNT, typename LA, typename LB>
__device__ __forceinline__ void gemm_pair_nt(float (&s)[kNT][4], float (&dp)[kNT][4], const LA& la1, const LA& la2,
                                             const LB& lb1, const LB& lb2, int a_row) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.f;
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
    uint32_t a1[4], a2[4];
    ldmatrix_x4(a1, la1.at(a_row, ks * 2));
    ldmatrix_x4(a2, la2.at(a_row, ks * 2));
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      uint32_t b1[4], b2[4];
      ldmatrix_x4(b1, lb1.at(np * 16, ks * 2));
      ldmatrix_x4(b2, lb2.at(np * 16, ks * 2));
      mma_16816<E>(s[2 * np], a1, b1[0], b1[1]);
      mma_16816<E>(s[2 * np + 1], a1, b1[2], b1[3]);
      mma_16816<E>(dp[2 * np], a2, b2[0], b2[1]);
      mma_16816<E>(dp[2 * np + 1], a2, b2[2], b2[3]);
    }
  }
}

// acc += A . B^T over kSteps k16 steps: A's kTM m16 tiles from rows a_row, a_row + 16, ... of la; B's kTN n8
// tiles from rows b_row, b_row + 8, ... of lb (K-major, as A).
template <typename E, int kSteps, int kTM, int kTN, typename LA, typename LB>
__device__ __forceinline__ void gemm_nt(float (&acc)[kTM][kTN][4], const LA& la, int a_row, const LB& lb, int b_row) {
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
    uint32_t a[kTM][4];
#pragma unroll
    for (int mt = 0; mt < kTM; ++mt) ldmatrix_x4(a[mt], la.at(a_row + mt * 16, ks * 2));
#pragma unroll
    for (int np = 0; np < kTN / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, lb.at(b_row + np * 16, ks * 2));
#pragma unroll
      for (int mt = 0; mt < kTM; ++mt) {
        mma_16816<E>(acc[mt][2 * np], a[mt], b[0], b[1]);
        mma_16816<E>(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

// acc += A . B over kSteps k16 steps: A as in gemm_nt; B MN-major (rows = k), its kTN n8 column tiles from
// 16-byte chunk b_chunk on (ldmatrix.trans).
template <typename E, int kSteps, int kTM, int kTN, typename LA, typename LB>
__device__ __forceinline__ void gemm_nn(float (&acc)[kTM][kTN][4], const LA& la, int a_row, const LB& lb, int b_chunk) {
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
    uint32_t a[kTM][4];
#pragma unroll
    for (int mt = 0; mt < kTM; ++mt) ldmatrix_x4(a[mt], la.at(a_row + mt * 16, ks * 2));
#pragma unroll
    for (int np = 0; np < kTN / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, lb.at(ks * 16, b_chunk + np * 2));
#pragma unroll
      for (int mt = 0; mt < kTM; ++mt) {
        mma_16816<E>(acc[mt][2 * np], a[mt], b[0], b[1]);
        mma_16816<E>(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
}

}  // namespace attn::flash
