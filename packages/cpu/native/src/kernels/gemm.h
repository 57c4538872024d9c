// fp32 register-blocked matrix product, the one shape every attention product maps to:
//   C[M x N] (+)= A[M x K] * B[K x N]
// A(r, k) at a[r*ars + k*aks] (any strides: row-major, transposed, or a tensor view as is), of
// element type TA: float, or bf16/fp16 bits (Bf16Bits, F16Bits) converted as they are broadcast,
// B row-major with leading dimension ldb, C row-major with ldc. N must be a multiple of kLanes
// (callers pad their buffers). An MR x (NV*kLanes) tile of C lives in registers across the whole
// K loop: per k, NV vector loads of B and MR broadcasts of A feed MR*NV FMAs.
#pragma once
#include <cstdint>

#include "kernels/half.h"

namespace attn_cpu {
namespace ATTN_ISA {

// With colmax, the tile also folds the max of each of its columns into colmax[0 .. NV*kLanes)
// (the forward's block max comes out of the registers instead of another pass over S^T).
template <int MR, int NV, bool kAcc, class TA>
inline void gemm_tile(int64_t K, const TA* a, int64_t ars, int64_t aks, const float* b, int64_t ldb, float* c,
                      int64_t ldc, float* colmax) {
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = kAcc ? vload(c + r * ldc + v * kLanes) : vzero();
#pragma GCC unroll 4
  for (int64_t k = 0; k < K; ++k) {
    const float* bk = b + k * ldb;
    const TA* ak = a + k * aks;
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = vload(bk + v * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const V av = vset(to_f32(ak[r * ars]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = vfma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vstore(c + r * ldc + v * kLanes, acc[r][v]);
  if (colmax) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      V mx = vload(colmax + v * kLanes);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) mx = vmax(acc[r][v], mx);
      vstore(colmax + v * kLanes, mx);
    }
  }
}

// Picks the tile for a remainder (mr <= kMR rows, nv <= kNV vectors) at run time.
template <bool kAcc, int MR, int NV, class TA>
inline void gemm_tile_nv(int nv, int64_t K, const TA* a, int64_t ars, int64_t aks, const float* b, int64_t ldb,
                         float* c, int64_t ldc, float* colmax) {
  if constexpr (NV > 0) {
    if (nv == NV) return gemm_tile<MR, NV, kAcc>(K, a, ars, aks, b, ldb, c, ldc, colmax);
    gemm_tile_nv<kAcc, MR, NV - 1>(nv, K, a, ars, aks, b, ldb, c, ldc, colmax);
  }
}
template <bool kAcc, int MR, class TA>
inline void gemm_tile_mr(int mr, int nv, int64_t K, const TA* a, int64_t ars, int64_t aks, const float* b, int64_t ldb,
                         float* c, int64_t ldc, float* colmax) {
  if constexpr (MR > 0) {
    if (mr == MR) return gemm_tile_nv<kAcc, MR, kNV>(nv, K, a, ars, aks, b, ldb, c, ldc, colmax);
    gemm_tile_mr<kAcc, MR - 1>(mr, nv, K, a, ars, aks, b, ldb, c, ldc, colmax);
  }
}

// Column panels of kNV vectors outermost, so one panel of B stays in L1 while the row tiles pass.
// colmax (optional, N floats): folds in the max of each column of C.
template <bool kAcc, class TA>
inline void gemm(int64_t M, int64_t N, int64_t K, const TA* a, int64_t ars, int64_t aks, const float* b, int64_t ldb,
                 float* c, int64_t ldc, float* colmax = nullptr) {
  constexpr int64_t W = kNV * kLanes;
  for (int64_t n0 = 0; n0 < N; n0 += W) {
    const int nv = static_cast<int>((N - n0 < W ? N - n0 : W) / kLanes);
    for (int64_t m0 = 0; m0 < M; m0 += kMR) {
      const int mr = static_cast<int>(M - m0 < kMR ? M - m0 : kMR);
      gemm_tile_mr<kAcc, kMR>(mr, nv, K, a + m0 * ars, ars, aks, b + n0, ldb, c + m0 * ldc + n0, ldc,
                              colmax ? colmax + n0 : nullptr);
    }
  }
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
