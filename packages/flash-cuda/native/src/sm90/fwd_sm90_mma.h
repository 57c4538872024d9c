// The two GEMMs of a key tile as wgmma batches, for one warpgroup's 64 query rows (issue only: the caller
// fences, commits and waits, so it decides what overlaps them), and the P fragments between them.
#pragma once
#include <cstdint>

#include "../ptx.h"
#include "wgmma_ops.h"

namespace attn::flash::sm90 {

// S = Q.K^T over the head dim: kKSteps k16 steps, both operands K-major in shared memory. desc_q / desc_k:
// the tiles' descriptors at their first column; a step moves to 64-column block ks / 4 (rows x 128 bytes)
// and 32 bytes into it (16-byte units below).
template <typename Tr>
__device__ __forceinline__ void issue_qk(float (&s)[Tr::kNTiles][4], uint64_t desc_q, uint64_t desc_k) {
#pragma unroll
  for (int ks = 0; ks < Tr::kKSteps; ++ks) {
    const uint32_t q_step = (ks >> 2) * Tr::kBlockM * 8 + (ks & 3) * 2;
    const uint32_t k_step = (ks >> 2) * Tr::kBlockN * 8 + (ks & 3) * 2;
    Wgmma<typename Tr::Element, Tr::kBlockN>::template ss<0>(s, desc_q + q_step, desc_k + k_step, ks > 0);
  }
}

// P (probabilities, fp32 accumulator layout) as A fragments: k16 step kk is columns 16kk..16kk+15, i.e.
// the n8 groups 2kk and 2kk+1 (mma.m16n8k16's A layout, which wgmma's register A shares per warp).
template <typename Tr>
__device__ __forceinline__ void pack_p(const float (&s)[Tr::kNTiles][4], uint32_t (&pa)[Tr::kPSteps][4]) {
  using Op = MmaOp<typename Tr::Element>;
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) {
    pa[kk][0] = Op::pack(s[2 * kk][0], s[2 * kk][1]);
    pa[kk][1] = Op::pack(s[2 * kk][2], s[2 * kk][3]);
    pa[kk][2] = Op::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pa[kk][3] = Op::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// O += P.V: kPSteps k16 steps over the key rows; V is MN-major (transposed B), 16 key rows = 2048 bytes.
template <typename Tr>
__device__ __forceinline__ void issue_pv(float (&acc_o)[Tr::kDTiles][4], const uint32_t (&pa)[Tr::kPSteps][4],
                                         uint64_t desc_v) {
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk)
    Wgmma<typename Tr::Element, Tr::kHeadDim>::template rs<1>(acc_o, pa[kk], desc_v + kk * 128);
}

}  // namespace attn::flash::sm90
