// The two GEMMs of a key tile as wgmma batches, for one warpgroup's 64 query rows (issue only: the caller
// fences, commits and waits, so it decides what overlaps them), and the P fragments between them.
#pragma once
#include <cstdint>

#include <cmath>

#include "attn/convert.h"
#include "attn/ptx.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash::sm90 {

// The tiles' descriptors at stage 0 and the first k16 step; steps and stages are adds to the start-address
// field (16-byte units). Q: warpgroup wg's 64 rows of each 64-column block; V: MN-major, its 64-column
// blocks kBlockN rows apart.
struct TileDescs {
  uint64_t q, k, v;
};
template <typename Tr>
__device__ __forceinline__ TileDescs tile_descs(const void* sQ, const void* sK, const void* sV, int wg) {
  return {make_desc(smem_addr(sQ) + wg * 64 * 128, 16, 1024), make_desc(smem_addr(sK), 16, 1024),
          make_desc(smem_addr(sV), Tr::kBlockN * 128, 1024)};
}

// O, the running max and the running sum of a thread's rows before the first key tile.
template <typename Tr>
__device__ __forceinline__ void init_rows(float (&acc_o)[1][Tr::kDTiles][4], float (&row_max)[1][2],
                                          float (&row_sum)[1][2]) {
#pragma unroll
  for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[0][dt][e] = 0.f;
  row_max[0][0] = row_max[0][1] = -INFINITY;
  row_sum[0][0] = row_sum[0][1] = 0.f;
}

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
  using E = typename Tr::Element;
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) {
    pa[kk][0] = pack2<E>(s[2 * kk][0], s[2 * kk][1]);
    pa[kk][1] = pack2<E>(s[2 * kk][2], s[2 * kk][3]);
    pa[kk][2] = pack2<E>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pa[kk][3] = pack2<E>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
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
