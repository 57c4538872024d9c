// What both Hopper dK/dV kernels (flash_bwd_sm90_kernel.h, flash_bwd_sm90_roles_kernel.h) share: the
// shared-memory carve, the start of each (query head, query block) pair, the P^T / dS^T fragments and their
// store, and the epilogue's dK / dV rows. Both hold 16 keys per warp in mma.m16n8k16's accumulator layout.
#pragma once
#include <cstdint>

#include "../bwd_params.h"
#include "../flash_bwd_kernel.h"
#include "../kernel_traits.h"
#include "../ptx.h"
#include "wgmma_sync.h"

namespace attn::flash::sm90 {

// K, V, two stages of (Q, dO), dS^T, S^T (roles kernel only), two slots of lse and Dsum; the tiles start on
// a 1024-byte boundary (the descriptors' swizzle is computed from absolute address bits).
template <typename Tr>
struct BwdSmem {
  using E = typename Tr::Element;
  static constexpr int kStageElems = 2 * Tr::kSmemQElems;  // stage s: Q at q0 + s * kStageElems, dO after it
  E *k, *v, *q0, *ds;
  float *s, *lse, *dsum;  // s: [kQTiles * 4][128]; lse, dsum: [2][kBlockM]
  __device__ __forceinline__ explicit BwdSmem(unsigned char* raw) {
    const uint32_t raw_addr = smem_addr(raw);
    k = reinterpret_cast<E*>(raw + ((1024u - (raw_addr & 1023u)) & 1023u));
    v = k + Tr::kSmemKVElems;
    q0 = v + Tr::kSmemKVElems;
    ds = q0 + 2 * kStageElems;
    s = reinterpret_cast<float*>(ds + Tr::kSmemDsElems);
    lse = s + Tr::kSmemSFloats;
    dsum = lse + 2 * Tr::kBlockM;
  }
};

// The top of pair k: its lse / Dsum into slot `stage` (last read by pair k - 2, finished before the previous
// iteration's barriers), then wait for its Q / dO copies and publish everything to the async proxy and to
// every thread. After the barrier, every wgmma of pair k - 1 has completed (each kernel waits before looping).
template <typename Tr>
__device__ __forceinline__ void begin_pair(const BwdSmem<Tr>& sm, int stage, int tid, float lse_next, float dsum_next) {
  if (tid < Tr::kBlockM) {
    sm.lse[stage * Tr::kBlockM + tid] = lse_next;
    sm.dsum[stage * Tr::kBlockM + tid] = dsum_next;
  }
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();
}

// P^T or dS^T (fp32 accumulators, element (nt, e): key row g + 8 (e / 2), query column nt * 8 + 2t + e % 2)
// as A fragments: k16 step ms is query columns 16ms..16ms+15, n8 groups 2ms and 2ms + 1.
template <typename Tr>
__device__ __forceinline__ void pack_a(const float (&x)[Tr::kQTiles][4], uint32_t (&a)[Tr::kMSteps][4]) {
  using Op = MmaOp<typename Tr::Element>;
#pragma unroll
  for (int ms = 0; ms < Tr::kMSteps; ++ms)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      a[ms][c] = Op::pack(x[2 * ms + (c >> 1)][2 * (c & 1)], x[2 * ms + (c >> 1)][2 * (c & 1) + 1]);
}

// dS^T's A fragments into the dS^T tile (rows = the block's keys, from key row `row0` of this warp), then the
// proxy fence that lets the dQ wgmma read them after the next barrier.
template <typename Tr>
__device__ __forceinline__ void store_ds_t(typename Tr::Element* sds, const uint32_t (&a)[Tr::kMSteps][4], int row0,
                                           int g, int t) {
  using Ds = typename Tr::DsRows;
#pragma unroll
  for (int ms = 0; ms < Tr::kMSteps; ++ms)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int row = row0 + g + 8 * (c & 1);
      *reinterpret_cast<uint32_t*>(sds + swizzle_offset<Ds>(row, 2 * ms + (c >> 1), Tr::kBlockN) + 2 * t) = a[ms][c];
    }
  fence_proxy_async();
}

// A warp's 16 rows of dK or dV (keys j0 + g, j0 + g + 8) times `mul`, in the output dtype.
template <typename Tr>
__device__ __forceinline__ void store_key_rows(void* out, int64_t bs, int64_t hs, int64_t rs,
                                               const float (&acc)[Tr::kDTiles][4], float mul, const BwdSeq& sq, int b,
                                               int hk, int j0, int head_dim, int g, int t) {
  using E = typename Tr::Element;
  using Op = MmaOp<E>;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = j0 + g + 8 * r;
    if (j >= sq.seq_k) continue;
    E* row = static_cast<E*>(out) + sq.k_row(b, hk, j, bs, hs, rs);
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int col = dt * 8 + 2 * t + c;
        if (col < head_dim) row[col] = Op::from_float(acc[dt][2 * r + c] * mul);
      }
  }
}

}  // namespace attn::flash::sm90
