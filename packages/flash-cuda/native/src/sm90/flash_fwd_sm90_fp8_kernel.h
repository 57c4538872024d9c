// The Hopper fp8 forward kernel: float8_e4m3 q, k, v (per-tensor descale factors), bf16 out, fp32 logsumexp.
// FlashAttention-3's fp8 forward on the 16-bit kernel's schedule: the same consumer key loop
// (sm90/fwd_sm90_consumer.h: the two consumer warpgroups take turns and overlap P.V with the softmax), with K and
// V released apart; what differs is fp8's:
//   - both GEMMs are e4m3 wgmma (k32), P is rounded to e4m3 (relative to the running row max, as the 16-bit
//     kernel rounds it to bf16) and scaled by nothing else;
//   - the descale factors: q's and k's are folded into the score multiplier by the host (p.score_mul), v's
//     multiplies O before the epilogue (p.out_scale);
//   - the producer loads K_n into the ring and V_n into one of two staging tiles (cp.async), then, once V_n
//     has landed, transposes it into the ring's V^T stage (fwd_sm90_fp8_ops.h) and fences it for wgmma. Tile
//     n + 1's loads are in flight during tile n's transpose.
// Lean calls only: causal or a right window bound in either alignment, GQA, dense or varlen offsets, head dims
// 16..128 in steps of 16, every tensor 16-byte aligned (the plan declines the rest).
#pragma once
#include <cstdint>

#include "attn/barriers.h"
#include "attn/ptx.h"
#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "common/row_state.h"
#include "common/tile_io.h"
#include "sm90/fwd_sm90_consumer.h"
#include "sm90/fwd_sm90_fp8_ops.h"
#include "sm90/fwd_sm90_fp8_traits.h"
#include "sm90/fwd_sm90_mma.h"
#include "sm90/fwd_sm90_work.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

// The fp8 GEMMs of sm90::consumer_key_loop: e4m3 wgmma (k32), K and V^T K-major in the ring (a stage is one
// tile further), P rounded to e4m3 in registers.
template <typename Tr>
struct GemmsFp8 {
  static constexpr uint32_t kTileUnits = Tr::kTileBytes / 16;  // one tile, in descriptor units
  uint64_t q, k, vt;
  __device__ __forceinline__ void qk(float (&s)[Tr::kNTiles][4], int stage) const {
    sm90::issue_qk_fp8<Tr>(s, q, k + stage * kTileUnits);
  }
  __device__ __forceinline__ void pv(float (&acc_o)[Tr::kDTiles][4], const uint32_t (&pa)[Tr::kPSteps][4],
                                     int stage) const {
    sm90::issue_pv_fp8<Tr>(acc_o, pa, vt + stage * kTileUnits);
  }
  __device__ __forceinline__ void pack(const float (&s)[Tr::kNTiles][4], uint32_t (&pa)[Tr::kPSteps][4]) const {
    sm90::pack_p_fp8<Tr>(s, pa);
  }
};

template <typename Tr>
__global__ void __launch_bounds__(Tr::kLaunchThreads, Tr::kMinBlocks)
    flash_fwd_sm90_fp8_kernel(const __grid_constant__ FwdParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  using L = Bytes64Layout<128>;  // tile copies by the producer's 128 threads, in 2-byte units
  constexpr int kN = Tr::kBlockN, kStages = Tr::kStages, kConsumers = Tr::kNThreads;
  // Named barriers: 1 = the consumers' own (Q landed, O staged); sm90::kTurnBar + wg = warpgroup wg's turn on the
  // tensor cores (fwd_sm90_consumer.h); 4 = the producer's (a staged V tile landed / was read by every producer
  // thread).
  constexpr int kConsumerBar = 1, kProducerBar = 4;
  static_assert(kProducerBar >= sm90::kTurnBar + 2, "the producer's barrier is not a turn's");
  dependent_launch_prologue();  // before any global access (common/dependent_launch.h)

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t raw_addr = smem_addr(smem_raw);
  unsigned char* base = smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u);
  const uint32_t sQ = smem_addr(base);
  const uint32_t sK = sQ + Tr::kTileBytes;                  // stage s at + s * kTileBytes
  const uint32_t sVt = sK + kStages * Tr::kTileBytes;       // the same
  const uint32_t sStaged = sVt + kStages * Tr::kTileBytes;  // the staging tiles (O, bf16, in the first two at the end)
  const uint32_t k_full = sStaged + Tr::kStagedTiles * Tr::kTileBytes;  // kStages mbarriers each, 8 bytes apart
  const uint32_t k_empty = k_full + kStages * 8, v_full = k_empty + kStages * 8, v_empty = v_full + kStages * 8;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  sm90::CtaWork<E> w;
  if (!sm90::cta_work<Tr>(p, w)) return;
  const int n_end = w.n_end;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(k_full + 8 * s, 128);           // the producer's threads, once their K copies landed
      sm90::mbar_init(k_empty + 8 * s, Tr::kNWarps);  // one lane per consumer warp, once S_n is done
      sm90::mbar_init(v_full + 8 * s, 128);           // the producer's threads, once their V^T stores are fenced
      sm90::mbar_init(v_empty + 8 * s, Tr::kNWarps);  // one lane per consumer warp, once P.V_n is done
    }
  }
  __syncthreads();  // barriers initialized; the only CTA-wide barrier (before the roles diverge)

  if (warp >= Tr::kNWarps) {
    // ---- producer warpgroup: K_n into the ring, V_n staged and transposed into it, n from the last tile down
    sm90::regs_dealloc<Tr::kProducerRegs>();
    using IO = TileIO<L>;
    using LE = typename L::Element;
    const int ptid = tid - kConsumers;
    const int64_t k_rs = p.k_row_stride / 2, v_rs = p.v_row_stride / 2;  // 2-byte units (strides are even)
    const int d_units = p.head_dim / 2;
    const LE* k_bh = reinterpret_cast<const LE*>(w.k_bh);
    const LE* v_bh = reinterpret_cast<const LE*>(w.v_bh);
    LE* staged = reinterpret_cast<LE*>(base + (sStaged - sQ));
    auto load_v = [&](int n, int buf) {
      IO::template load_rows<kN>(staged + buf * (Tr::kTileBytes / 2), v_bh + int64_t(n) * kN * v_rs, v_rs,
                                 w.seq_k - n * kN, d_units, true, v_bh, ptid);
    };
    constexpr int kStaged = Tr::kStagedTiles;
    // Commit groups: one per staged V ahead (the prologue), then one per tile (K_n and the V kStaged - 1 tiles
    // later), so that waiting for all but the newest kStaged - 1 groups waits for V_n.
#pragma unroll
    for (int a = 0; a < kStaged - 1; ++a) {
      if (a < n_end) load_v(n_end - 1 - a, a);
      cp_async_commit();
    }
    int stage = 0;
    uint32_t phase = 0;
#pragma unroll 1
    for (int i = 0; i < n_end; ++i) {
      const int n = n_end - 1 - i;
      sm90::mbar_wait(k_empty + 8 * stage, phase ^ 1);  // both warpgroups done with S of the tile kStages before
      IO::template load_rows<kN>(reinterpret_cast<LE*>(base + (sK - sQ) + stage * Tr::kTileBytes),
                                 k_bh + int64_t(n) * kN * k_rs, k_rs, w.seq_k - n * kN, d_units, true, k_bh, ptid);
      sm90::cp_async_mbar_arrive(k_full + 8 * stage);
      if (n - (kStaged - 1) >= 0) load_v(n - (kStaged - 1), (i + kStaged - 1) % kStaged);
      cp_async_commit();
      cp_async_wait<kStaged - 1>();                     // V_n has landed (this thread's copies)
      named_barrier_sync(kProducerBar, 128);            // ... and every producer thread's
      sm90::mbar_wait(v_empty + 8 * stage, phase ^ 1);  // both warpgroups done with P.V of the tile kStages before
#ifndef ATTN_FP8_SKIP_TRANSPOSE  // diagnostic builds only (tools/research/fp8-fwd-probe.sh): the transpose's cost
      sm90::transpose_v_fp8<Tr>(sStaged + (i % kStaged) * Tr::kTileBytes, sVt + stage * Tr::kTileBytes, ptid);
#endif
      sm90::fence_proxy_async();
      sm90::mbar_arrive(v_full + 8 * stage);
      named_barrier_sync(kProducerBar, 128);  // staging tile i % kStaged read by all: a later load may reuse it
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    cp_async_wait<0>();  // nothing in flight when the warps exit
    return;
  }

  // ---- consumer warpgroups
  sm90::regs_alloc<Tr::kConsumerRegs>();
  const int wg = warp >> 2;
  const RowCtx rc = sm90::row_ctx<Tr>(w, warp, g);
  {
    using LC = Bytes64Layout<kConsumers>;
    using LE = typename LC::Element;
    const LE* q_bh = reinterpret_cast<const LE*>(w.q_bh);
    const int64_t q_rs = p.q_row_stride / 2;
    TileIO<LC>::template load<Tr::kBlockM>(
        reinterpret_cast<LE*>(base),
        [&](int row) -> const LE* { return w.row0 + row < w.seq_q ? q_bh + (w.row0 + row) * q_rs : nullptr; },
        p.head_dim / 2, true, q_bh, tid);
  }
  cp_async_commit();
  cp_async_wait<0>();
  sm90::fence_proxy_async();
  named_barrier_sync(kConsumerBar, kConsumers);

  // Q: warpgroup wg's 64 rows; K and V^T: 128-byte rows, 8-row groups 1024 bytes apart (all K-major).
  const uint64_t desc_q = sm90::make_desc(sQ + wg * 64 * 128, 16, 1024);
  const uint64_t desc_k = sm90::make_desc(sK, 16, 1024), desc_vt = sm90::make_desc(sVt, 16, 1024);
  float acc_o[1][Tr::kDTiles][4], row_max[1][2], row_sum[1][2];
  sm90::init_rows<Tr>(acc_o, row_max, row_sum);
  sm90::consumer_key_loop<Tr, true, true>(p, w, rc, {k_full, k_empty, v_full, v_empty},
                                          GemmsFp8<Tr>{desc_q, desc_k, desc_vt}, wg, lane, t, acc_o, row_max, row_sum);
#pragma unroll
  for (int dt = 0; dt < Tr::kDTiles; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[0][dt][e] *= p.out_scale;  // v's descale
  // O (bf16) is staged in the two staging tiles: the producer's last read of them (its last transpose) came
  // before its last v_full arrival, which every consumer has waited for.
  sm90::store_output<typename Tr::OutTile, kConsumers>(p, w, acc_o, row_max, row_sum,
                                                       reinterpret_cast<__nv_bfloat16*>(base + (sStaged - sQ)), tid,
                                                       [] { named_barrier_sync(kConsumerBar, kConsumers); });
#endif
}

}  // namespace attn::flash
