// D = rowsum(dO * O) for the 3xTF32 backward (bwd_tf32.cuh), by the arithmetic of its dP^T = V dO^T:
// per k8 step of the head dim a fresh 3xTF32 partial (mma_1688_3xtf32, operands split by
// split_tf32_lean) added to the running sum in step order, with O in V's place as the A operand and dO
// as the B operand. Where O is exactly one V row (a query that sees one key, conformance sq17-sk1) D and
// that dP are the same bits, so dS = P (dP - D) is exactly 0 as in the naive implementation (with D and dP
// summed in different orders the case fails on ~20% of seeds).
#pragma once
#include <cstdint>

#include "common/params.h"
#include "common/tf32x3.cuh"

namespace memeff {

// One warp per 16 rows of [B, Hq, Sq]: the m16n8k8 product of O's 16 rows (A) with dO's rows 0-7 and
// 8-15 (B, two n8 tiles), of which only the diagonal is kept.
// T = float (a template so that the header can be included by several units).
template <typename T>
__global__ void __launch_bounds__(128) bwd_dsum_tf32_kernel(const BwdParams p) {
  static_assert(sizeof(T) == 4, "fp32 only");
#ifdef ATTN_SM80
  const int64_t rows = static_cast<int64_t>(p.batch) * p.heads_q * p.seq_q;
  const int64_t r0 = (static_cast<int64_t>(blockIdx.x) * 4 + threadIdx.x / 32) * 16;
  if (r0 >= rows) return;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // This lane's rows r0 + g and r0 + 8 + g: their O and dO, or null past the end.
  auto row_of = [&](int64_t r, const T*& o, const T*& d) {
    o = d = nullptr;
    if (r >= rows) return;
    const int i = static_cast<int>(r % p.seq_q);
    const int bh = static_cast<int>(r / p.seq_q), b = bh / p.heads_q, h = bh % p.heads_q;
    o = static_cast<const T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1] + i * p.o_stride[2];
    d = static_cast<const T*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1] + i * p.do_stride[2];
  };
  const T *o0, *d0, *o1, *d1;
  row_of(r0 + g, o0, d0);
  row_of(r0 + 8 + g, o1, d1);
  auto part = [&](const T* x, int c) { return split_tf32_lean(x != nullptr && c < p.head_dim_v ? x[c] : 0.f); };
  // acc0 / acc1: dO rows 0-7 / 8-15, over k8 steps [ks0, ks1).
  auto sum_steps = [&](float (&acc0)[4], float (&acc1)[4], int ks0, int ks1) {
    for (int ks = ks0; ks < ks1; ++ks) {
      const int c = ks * 8 + t;
      const Tf32Pair a[4] = {part(o0, c), part(o1, c), part(o0, c + 4), part(o1, c + 4)};
      const Tf32Pair b0[2] = {part(d0, c), part(d0, c + 4)}, b1[2] = {part(d1, c), part(d1, c + 4)};
      mma_1688_3xtf32(acc0, a, b0);
      mma_1688_3xtf32(acc1, a, b1);
    }
  };
  const int steps = (p.head_dim_v + 7) / 8;
  float acc0[4] = {0.f, 0.f, 0.f, 0.f}, acc1[4] = {0.f, 0.f, 0.f, 0.f};
  if (p.dsum_tf32_half > 0) {  // the split kernel's two running sums, then their sum (bwd_tf32.cuh, kDSplit)
    float hi0[4] = {0.f, 0.f, 0.f, 0.f}, hi1[4] = {0.f, 0.f, 0.f, 0.f};
    const int half = steps < p.dsum_tf32_half ? steps : p.dsum_tf32_half;
    sum_steps(acc0, acc1, 0, half);
    sum_steps(hi0, hi1, half, steps);
    add_partial(acc0, hi0);
    add_partial(acc1, hi1);
  } else {
    sum_steps(acc0, acc1, 0, steps);
  }
  // Element (m, n) of a tile is in lane (g = m % 8, t = n / 2): (g, g) of tile 0 is c0 or c1 of lane
  // t = g / 2, and (8 + g, g) of tile 1 (dO row 8 + g) its c2 or c3.
  if (t == g / 2) {
    if (o0 != nullptr) p.dsum[r0 + g] = acc0[g & 1];
    if (o1 != nullptr) p.dsum[r0 + 8 + g] = acc1[2 + (g & 1)];
  }
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
