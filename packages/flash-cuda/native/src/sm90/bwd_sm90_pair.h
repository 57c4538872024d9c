// What the Hopper dK/dV kernels (flash_bwd_sm90_kernel.h, flash_bwd_sm90_roles_kernel.h,
// flash_bwd_sm90_tma_ws_kernel.h) share: the shared-memory carve, the pair walk and its Q / dO pipeline, the start
// of each (query head, query block) pair, the score products and their plain-tile P / dS, the P^T / dS^T fragments
// and their store, the dQ rows' reductions and the epilogue's dK / dV rows. All hold 16 keys per warp in
// mma.m16n8k16's accumulator layout.
#pragma once
#include <cstdint>

#include "common/bwd_params.h"
#include "bwd/bwd_scores.h"
#include "bwd/flash_bwd_kernel.h"
#include "common/kernel_traits.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/tile_io.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash::sm90 {

// The k16 step ks of a K-major operand whose 64-column blocks are `rows` rows apart, in descriptor units (16 bytes):
// column block ks / 4, and 32 bytes into its rows per step within it.
__device__ __forceinline__ uint32_t kstep(int ks, int rows) { return uint32_t((ks >> 2) * rows * 8 + (ks & 3) * 2); }

// S^T = K Q^T into st and dP^T = V dO^T into dpt for a warpgroup's 64 keys (desc_k, desc_v) against a stage's query
// tile (desc_q, desc_do), one commit group each. On a plain tile P goes into st while dP^T's GEMM still runs, then
// dS into dpt (lse_s / dsum_s: the stage's rows; element (nt, e) is key row 16 warp + g + 8 (e / 2), query column
// nt * 8 + 2t + e % 2). On any other tile it waits for both products and runs edge(), the kernel's element rule
// (P into st, dS into dpt), in the same branch.
template <typename Tr, typename EdgeRule>
__device__ __forceinline__ void score_products(float (&st)[Tr::kQTiles][4], float (&dpt)[Tr::kQTiles][4], bool plain,
                                               uint64_t desc_k, uint64_t desc_v, uint64_t desc_q, uint64_t desc_do,
                                               const float* lse_s, const float* dsum_s, float score_mul, int t,
                                               EdgeRule&& edge) {
  using E = typename Tr::Element;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kQT = Tr::kQTiles;
  fence_operands(st);
  fence_operands(dpt);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < Tr::kKSteps; ++ks)
    Wgmma<E, kM>::template ss<0>(st, desc_k + kstep(ks, kN), desc_q + kstep(ks, kM), ks > 0);
  wgmma_commit();
#pragma unroll
  for (int ks = 0; ks < Tr::kKSteps; ++ks)
    Wgmma<E, kM>::template ss<0>(dpt, desc_v + kstep(ks, kN), desc_do + kstep(ks, kM), ks > 0);
  wgmma_commit();
  if (!plain) {
    wgmma_wait<0>();
    fence_operands(st);
    fence_operands(dpt);
    edge();
    return;
  }
  wgmma_wait<1>();
  fence_operands(st);
#pragma unroll
  for (int nt = 0; nt < kQT; ++nt) {
    const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
#pragma unroll
    for (int e = 0; e < 4; ++e) st[nt][e] = prob_plain(st[nt][e], (e & 1) ? l2.y : l2.x, score_mul);
  }
  wgmma_wait<0>();
  fence_operands(dpt);
#pragma unroll
  for (int nt = 0; nt < kQT; ++nt) {
    const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
    for (int e = 0; e < 4; ++e) dpt[nt][e] = grad_plain(st[nt][e], dpt[nt][e], (e & 1) ? d2.y : d2.x);
  }
}

// dV += P^T dO and dK += dS^T Q of a warpgroup's 64 keys, one commit group: pa / da are P^T and dS^T as A
// fragments, desc_do / desc_q the stage's dO and Q MN-major (a k16 step is 16 query rows, 128 descriptor units).
template <typename Tr>
__device__ __forceinline__ void dkdv_products(float (&acc_dv)[Tr::kDTiles][4], float (&acc_dk)[Tr::kDTiles][4],
                                              const uint32_t (&pa)[Tr::kMSteps][4],
                                              const uint32_t (&da)[Tr::kMSteps][4], uint64_t desc_do, uint64_t desc_q) {
  using E = typename Tr::Element;
  constexpr int kD = Tr::kHeadDim, kMS = Tr::kMSteps;
  fence_operands(acc_dv);
  fence_operands(acc_dk);
  wgmma_fence();
#pragma unroll
  for (int ms = 0; ms < kMS; ++ms) Wgmma<E, kD>::template rs<1>(acc_dv, pa[ms], desc_do + ms * 128);
#pragma unroll
  for (int ms = 0; ms < kMS; ++ms) Wgmma<E, kD>::template rs<1>(acc_dk, da[ms], desc_q + ms * 128);
  wgmma_commit();
}

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

// The (query head, query block) pairs of a CTA in loop order: every query block [m_begin, m_end) of head h,
// then the next head of the GQA group. Stepped one pair at a time, so the loop divides nothing.
struct PairWalk {
  int h, m, m_begin, m_end;
  __device__ __forceinline__ void next() {
    if (++m == m_end) {
      m = m_begin;
      ++h;
    }
  }
};

// Issues pair (h, i0)'s Q and dO rows into q_dst (dO right after Q) as one cp.async group, each thread copying
// one 16-byte column chunk of every kNThreads / kChunksPerRow-th row (TileIO::load_rows: one 64-bit source per
// thread, stepped), and loads the raw lse and Dsum of row i0 + tid for threads tid < kM. They reach shared
// memory at the pair's begin_pair, one iteration later, so nothing waits on these loads here.
template <typename Tr, typename E>
__device__ __forceinline__ void prefetch_rows(E* q_dst, const BwdParams& p, const BwdSeq& sq, int b, int h, int i0,
                                              int tid, float& lse_next, float& dsum_next) {
  using IO = TileIO<Tr>;
  constexpr int kM = Tr::kBlockM;
  const FwdParams& f = p.f;
  const int rows = sq.seq_q - i0;
  const E* q = static_cast<const E*>(f.q);
  const E* dout = static_cast<const E*>(p.dout);
  IO::template load_rows<kM>(q_dst, q + sq.q_row(b, h, i0, f.q_batch_stride, f.q_head_stride, f.q_row_stride),
                             f.q_row_stride, rows, f.head_dim, f.aligned16, q, tid);
  IO::template load_rows<kM>(q_dst + Tr::kSmemQElems,
                             dout + sq.q_row(b, h, i0, p.do_batch_stride, p.do_head_stride, p.do_row_stride),
                             p.do_row_stride, rows, f.head_dim, f.aligned16, dout, tid);
  cp_async_commit();
  if (tid < kM) {
    const bool in = tid < rows;
    const int64_t li = in ? sq.lse_index(f, b, h, i0 + tid) : 0;
    lse_next = in ? f.lse[li] : -INFINITY;
    dsum_next = in ? p.dsum[li] : 0.f;
  }
}

// The top of pair k: its lse (raw, from prefetch_rows; log2 units here) and Dsum into slot `stage` (last read
// by pair k - 2, finished before the previous iteration's barriers), then wait for its Q / dO copies and publish
// everything to the async proxy and to every thread. After the barrier, every wgmma of pair k - 1 has completed
// (each kernel waits before looping).
template <typename Tr>
__device__ __forceinline__ void begin_pair(const BwdSmem<Tr>& sm, int stage, int tid, float lse_next, float dsum_next) {
  if (tid < Tr::kBlockM) {
    sm.lse[stage * Tr::kBlockM + tid] = lse_log2(lse_next);
    sm.dsum[stage * Tr::kBlockM + tid] = dsum_next;
  }
  cp_async_wait<0>();
  fence_proxy_async();
  __syncthreads();
}

// The pair loop's Q / dO pipeline over the pairs in order (PairWalk): pair 0's rows are issued before the
// loop (start), and at the top of pair k, once begin_pair has published pair k's, pair k + 1's go into the
// other stage (begin), so that they overlap pair k's math.
template <typename Tr>
struct PairPipeline {
  const BwdSmem<Tr>& sm;
  const BwdParams& p;
  const BwdSeq& sq;
  int b, tid, pairs;
  PairWalk fetch;  // the pair whose rows were issued last
  float lse_next = -INFINITY, dsum_next = 0.f;

  __device__ __forceinline__ void prefetch(int stage) {
    prefetch_rows<Tr>(sm.q0 + stage * BwdSmem<Tr>::kStageElems, p, sq, b, fetch.h, fetch.m * Tr::kBlockM, tid, lse_next,
                      dsum_next);
  }
  __device__ __forceinline__ void start() {
    if (pairs > 0) prefetch(0);
  }
  __device__ __forceinline__ void begin(int k, int stage) {
    begin_pair(sm, stage, tid, lse_next, dsum_next);
    if (k + 1 < pairs) {
      fetch.next();
      prefetch(stage ^ 1);
    }
  }
};

// P^T or dS^T (fp32 accumulators, element (nt, e): key row g + 8 (e / 2), query column nt * 8 + 2t + e % 2)
// as A fragments: k16 step ms is query columns 16ms..16ms+15, n8 groups 2ms and 2ms + 1.
template <typename Tr>
__device__ __forceinline__ void pack_a(const float (&x)[Tr::kQTiles][4], uint32_t (&a)[Tr::kMSteps][4]) {
  using E = typename Tr::Element;
#pragma unroll
  for (int ms = 0; ms < Tr::kMSteps; ++ms)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      a[ms][c] = pack2<E>(x[2 * ms + (c >> 1)][2 * (c & 1)], x[2 * ms + (c >> 1)][2 * (c & 1) + 1]);
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

// A warp's 16 rows of a dQ tile (query rows row0 + g and row0 + g + 8 of head h; columns col0 + 8 nt + 2t,
// + 1) added into the float32 workspace with red.global.add.v2; rows past the sequence end are skipped.
template <int kTiles>
__device__ __forceinline__ void red_dq_rows(const BwdParams& p, const BwdSeq& sq, int b, int h, int row0, int col0,
                                            const float (&dq)[kTiles][4], int g, int t) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + g + 8 * r;
    if (i >= sq.seq_q) continue;
    float* dst = p.dq_accum + sq.lse_index(p.f, b, h, i) * p.dq_accum_stride + col0 + 2 * t;
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) red_add_f32x2(dst + nt * 8, dq[nt][2 * r], dq[nt][2 * r + 1]);
  }
#endif
}

// A warp's 16 rows of dK or dV (keys j0 + g, j0 + g + 8) times `mul`, in the output dtype, straight from the
// accumulators (the D256 roles kernel's epilogue).
template <typename Tr>
__device__ __forceinline__ void store_key_rows(void* out, int64_t bs, int64_t hs, int64_t rs,
                                               const float (&acc)[Tr::kDTiles][4], float mul, const BwdSeq& sq, int b,
                                               int hk, int j0, int head_dim, int g, int t) {
  using E = typename Tr::Element;
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
        if (col < head_dim) row[col] = from_float<E>(acc[dt][2 * r + c] * mul);
      }
  }
}

// A warp's 16 rows of dK or dV (tile rows row0 + g, row0 + g + 8) times `mul`, in the output dtype, into a
// swizzled tile of kRows rows (the epilogue reuses K's or V's tile): conflict-free 4-byte stores, so that the
// global writes can go out in 16-byte row chunks (store_tile_rows).
template <typename Tr, int kRows>
__device__ __forceinline__ void stage_key_rows(typename Tr::Element* tile, const float (&acc)[Tr::kDTiles][4],
                                               float mul, int row0, int g, int t) {
  using E = typename Tr::Element;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; ++dt)
      *reinterpret_cast<uint32_t*>(tile + swizzle_offset<Tr>(row0 + g + 8 * r, dt, kRows) + 2 * t) =
          pack2<E>(acc[dt][2 * r] * mul, acc[dt][2 * r + 1] * mul);
}

// Rows j0 .. j0 + kRows - 1 (bounded by seq_k) of key head hk from a staged tile to dK or dV.
template <typename Tr, int kRows>
__device__ __forceinline__ void store_tile_rows(void* out, int64_t bs, int64_t hs, int64_t rs,
                                                const typename Tr::Element* tile, const BwdSeq& sq, int b, int hk,
                                                int j0, const FwdParams& f, int tid) {
  using E = typename Tr::Element;
  TileIO<Tr>::template store<kRows>(
      tile,
      [&](int row) -> E* {
        const int j = j0 + row;
        return j < sq.seq_k ? static_cast<E*>(out) + sq.k_row(b, hk, j, bs, hs, rs) : nullptr;
      },
      f.head_dim, f.aligned16, tid);
}

}  // namespace attn::flash::sm90
