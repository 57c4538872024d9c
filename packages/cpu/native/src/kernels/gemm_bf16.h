// bf16 x bf16 -> fp32 products with AVX512-BF16 (vdpbf16ps: 16 lanes, each a sum of two products).
// Same shape as gemm.h, but K runs over pairs:
//   C[M x N] (+)= sum over kp of A(r, kp) . B(kp, :)
// A(r, kp) is one uint32 holding the bf16 pair (k = 2kp, 2kp+1) of row r, at a[r*ars + kp]; B is
// "pair-packed": row kp holds N pairs (B[2kp][n], B[2kp+1][n]) as 2N uint16, leading dim ldb pairs.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace attn_cpu {
namespace ATTN_ISA {

template <int MR, int NV, bool kAcc>
inline void gemm_bf16_tile(int64_t KP, const uint32_t* a, int64_t ars, const uint16_t* b, int64_t ldb, float* c,
                           int64_t ldc) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = kAcc ? _mm512_loadu_ps(c + r * ldc + v * 16) : _mm512_setzero_ps();
  for (int64_t kp = 0; kp < KP; ++kp) {
    const uint16_t* bk = b + 2 * kp * ldb;
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(bk + v * 32);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * ars + kp]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + r * ldc + v * 16, acc[r][v]);
}

template <bool kAcc, int MR, int NV>
inline void gemm_bf16_tile_nv(int nv, int64_t KP, const uint32_t* a, int64_t ars, const uint16_t* b, int64_t ldb,
                              float* c, int64_t ldc) {
  if constexpr (NV > 0) {
    if (nv == NV) return gemm_bf16_tile<MR, NV, kAcc>(KP, a, ars, b, ldb, c, ldc);
    gemm_bf16_tile_nv<kAcc, MR, NV - 1>(nv, KP, a, ars, b, ldb, c, ldc);
  }
}
template <bool kAcc, int MR>
inline void gemm_bf16_tile_mr(int mr, int nv, int64_t KP, const uint32_t* a, int64_t ars, const uint16_t* b,
                              int64_t ldb, float* c, int64_t ldc) {
  if constexpr (MR > 0) {
    if (mr == MR) return gemm_bf16_tile_nv<kAcc, MR, kBfNV>(nv, KP, a, ars, b, ldb, c, ldc);
    gemm_bf16_tile_mr<kAcc, MR - 1>(mr, nv, KP, a, ars, b, ldb, c, ldc);
  }
}

// N a multiple of 16.
template <bool kAcc>
inline void gemm_bf16(int64_t M, int64_t N, int64_t KP, const uint32_t* a, int64_t ars, const uint16_t* b, int64_t ldb,
                      float* c, int64_t ldc) {
  constexpr int64_t W = kBfNV * 16;
  for (int64_t n0 = 0; n0 < N; n0 += W) {
    const int nv = static_cast<int>((N - n0 < W ? N - n0 : W) / 16);
    for (int64_t m0 = 0; m0 < M; m0 += kBfMR) {
      const int mr = static_cast<int>(M - m0 < kBfMR ? M - m0 : kBfMR);
      gemm_bf16_tile_mr<kAcc, kBfMR>(mr, nv, KP, a + m0 * ars, ars, b + 2 * n0, ldb, c + m0 * ldc + n0, ldc);
    }
  }
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
