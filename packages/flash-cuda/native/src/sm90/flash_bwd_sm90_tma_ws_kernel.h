// The TMA warp-specialized Hopper dK/dV kernel of the backward (FlashAttention-3's backward at D 64 and 128): the
// cp.async Hopper kernel's math (flash_bwd_sm90_kernel.h: one CTA per 128-key block, the whole GQA group and
// every query block that sees its keys, every GEMM on wgmma) with the data movement taken off the consumers:
//   - a producer warpgroup (setmaxnreg down to 40 registers): warp 0's elected lane loads K and V once and
//     streams each (query head, query block) pair's Q and dO tiles by TMA into a two-stage ring ('full' /
//     'empty' mbarriers, the TMA's bytes counted on 'full'); warp 1 writes the pair's lse (log2 units) and
//     Dsum rows into the same stage and arrives on 'full' too; warp 2's elected lane adds each pair's dQ tile
//     (fp32, shared memory) into the dQ workspace with one TMA reduction per 32 columns;
//   - two consumer warpgroups (setmaxnreg up to 232), 64 keys each, per pair:
//       wait full; S^T = K.Q^T, dP^T = V.dO^T (two commit groups: P while dP^T runs); P, dS (bwd_scores.h);
//       dS^T -> shared memory (one of two buffers, by pair parity); dV += P^T.dO, dK += dS^T.Q (A from
//       registers); consumer barrier (every key's dS^T is in); dQ = dS.K (this warpgroup's 64 columns, or at
//       D 64 its 64 query rows); once dV/dK are done the stage is released ('empty': every consumer thread
//       arrives, so that its own lse / Dsum reads are ordered before the lse warp rewrites them; an elected
//       lane per warp after __syncwarp left compute-sanitizer's racecheck reporting those reads); once dQ is
//       done it goes to the dQ tile (after the dQ warp's previous reduction has read it) and the dQ warp is
//       signalled.
//   The barriers: __syncthreads once (the mbarriers initialized); named barrier 1 = the consumers
//   (dS^T complete, the epilogue), 2 = dQ tile full and 3 = dQ tile free (consumers + the dQ warp), each
//   completed as often as it is waited on.
// Epilogue: dK (x scale) and dV staged in the K and V tiles, written in 16-byte row chunks.
// Deterministic mode: the same, with each query block's dQ tiles added in key-block order (turn counters,
// p.dq_turns): bitwise reproducible, with the workspace and its conversion as in the default mode.
// The calls it runs (bwd_dispatch.cu tma_ws_declines; the kernel option 'sm90-bwd-tma-ws'): dense, 16-byte
// aligned tensors the TMA can describe, no ALiBi, softcap or dropout; causal (either alignment), window bounds,
// GQA and deterministic mode.
#pragma once
#include <cuda.h>

#include <cstdint>
#ifdef ATTN_BWD_TMA_WS_WATCHDOG
#include <cstdio>
#endif

#include "attn/barriers.h"
#include "attn/fast_math.h"
#include "attn/ptx.h"
#include "bwd/bwd_scores.h"
#include "bwd/flash_bwd_kernel.h"
#include "common/bwd_params.h"
#include "sm90/bwd_sm90_pair.h"
#include "sm90/bwd_sm90_tma_ws_traits.h"
#include "sm90/tma_ops.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

// The kernel's parameters: the backward's, and the tensor maps of Q, K, V, dO (bf16/fp16, 64-column boxes)
// and the fp32 dQ workspace (32-column boxes), encoded on the host (sm90/tensor_maps.h).
struct BwdTmaArgs {
  BwdParams p;
  CUtensorMap q, k, v, dout, dq_accum;
};

namespace sm90 {

// K, V, two stages of (Q, dO), two dS^T buffers, the fp32 dQ tile (4 boxes of kBlockM rows x 32 columns,
// 128-byte swizzled), then per stage the lse and Dsum rows, and the mbarriers: full[2], empty[2], kv.
template <typename Tr>
struct TmaWsSmem {
  using E = typename Tr::Element;
  static constexpr int kStageElems = 2 * Tr::kSmemQElems;  // stage s: Q at q0 + s * kStageElems, dO after it
  E *k, *v, *q0, *ds0;
  float *dq, *lse, *dsum;
  uint32_t full, empty, kv;  // shared addresses; full[s] = full + 8 s
  __device__ __forceinline__ explicit TmaWsSmem(unsigned char* raw) {
    const uint32_t raw_addr = smem_addr(raw);
    k = reinterpret_cast<E*>(raw + ((1024u - (raw_addr & 1023u)) & 1023u));
    v = k + Tr::kSmemKVElems;
    q0 = v + Tr::kSmemKVElems;
    ds0 = q0 + Tr::kStages * kStageElems;
    dq = reinterpret_cast<float*>(ds0 + 2 * Tr::kSmemDsElems);
    lse = dq + Tr::kSmemDqFloats;
    dsum = lse + Tr::kStages * Tr::kBlockM;
    full = smem_addr(dsum + Tr::kStages * Tr::kBlockM);
    empty = full + 8 * Tr::kStages;
    kv = empty + 8 * Tr::kStages;
  }
};

// The kernel's mbarrier waits. Diagnostic builds (ATTN_BWD_TMA_WS_WATCHDOG, native/probe/bwd_tma_ws_probe.cu)
// give up after 2^24 polls, print which wait of which CTA and pair it was, and trap: a hang shows where it is.
__device__ __forceinline__ void ws_wait(uint32_t bar, uint32_t parity, const char* what, int k) {
#ifdef ATTN_BWD_TMA_WS_WATCHDOG
  for (uint32_t n = 0; n < (1u << 24); ++n) {
    uint32_t done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    if (done) return;
  }
  printf("bwd tma_ws watchdog: CTA (%d, %d, %d) thread %d: %s of pair %d (parity %u) never completed\n", blockIdx.x,
         blockIdx.y, blockIdx.z, threadIdx.x, what, k, parity);
  __trap();
#else
  (void)what;
  (void)k;
  mbar_wait(bar, parity);
#endif
}

// A warp's 16 rows of its warpgroup's dQ columns (rows row0 + g, + 8; columns col0 + 8 nt + 2t, + 1) into the
// fp32 dQ tile: box col / 32 of kRows x 32 floats, 16-byte chunks XOR-ed by row % 8 (the TMA's 128-byte
// swizzle), which also makes each warp-wide 8-byte store conflict-free.
template <int kRows, int kTiles>
__device__ __forceinline__ void stage_dq_rows(float* tile, const float (&dq)[kTiles][4], int row0, int col0, int g,
                                              int t) {
#pragma unroll
  for (int nt = 0; nt < kTiles; ++nt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + g + 8 * r, col = col0 + nt * 8 + 2 * t;
      const int cc = col & 31;
      float* dst = tile + (col >> 5) * (kRows * 32) + row * 32 + ((((cc >> 2) ^ (row & 7))) << 2) + (cc & 3);
      *reinterpret_cast<float2*>(dst) = make_float2(dq[nt][2 * r], dq[nt][2 * r + 1]);
    }
}

}  // namespace sm90

template <typename Tr>
__global__ void __launch_bounds__(Tr::kLaunchThreads, 1)
    flash_bwd_sm90_tma_ws_kernel(const __grid_constant__ BwdTmaArgs a) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  using sm90::Wgmma;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kD = Tr::kHeadDim, kStages = Tr::kStages;
  constexpr int kQT = Tr::kQTiles, kMS = Tr::kMSteps, kDT = Tr::kDTiles, kDqT = Tr::kDqTiles;
  constexpr int kConsumers = Tr::kNThreads;
  constexpr int kConsumerBar = 1, kDqFullBar = 2, kDqEmptyBar = 3, kDqBarThreads = kConsumers + 32;
  constexpr uint32_t kQBytes = Tr::kSmemQElems * 2, kKVBytes = Tr::kSmemKVElems * 2;
  const BwdParams& p = a.p;
  const FwdParams& f = p.f;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const sm90::TmaWsSmem<Tr> sm(smem_raw);
  constexpr int kStageElems = sm90::TmaWsSmem<Tr>::kStageElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // Deterministic mode launches each head's key blocks from the last (see the walk below), so that every key block
  // whose turn comes before this one's was launched before it.
  const int n_block = p.dq_turns != nullptr ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int hk = blockIdx.y, b = blockIdx.z;
  const BwdSeq sq(f, b);
  const int j0 = n_block * kN;
  if (j0 >= sq.seq_k) return;  // uniform over the CTA, before its only __syncthreads
  const int off = f.lower_right ? sq.seq_k - sq.seq_q : 0;
  const QueryBlocks qb = query_blocks_for_keys<kM, kN>(f, sq, j0, off);
  // The (query head, query block) pairs in order (every query block of head hk * group from the first, then the
  // next head), walked alike by every role. Deterministic mode: query block m's dQ tiles are added by the key
  // blocks that see it from the last down (n after n + 1, below), and the key blocks are launched from the last.
  // Block n's j-th pair is query block begin(n) + j, which key block n + 1 (whose range begins at or after
  // begin(n)) reaches as its pair j or earlier: at most one pair of skew per key block, none where the beginnings
  // step (causal). And a causal head's short blocks (the last ones, a few pairs) add first and leave; adding from
  // key block 0 up kept each of them resident until every block before it had added to its query blocks (the
  // deterministic time was 1.35x the default's at D 64 causal S 4k, H200, two runs).
  const int pairs = f.group * (qb.end - qb.begin);
  const sm90::PairWalk first{hk * f.group, qb.begin, qb.begin, qb.end};

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(sm.full + 8 * s, 1 + 32);       // the TMA lane's arrive.expect_tx + the lse warp's lanes
      sm90::mbar_init(sm.empty + 8 * s, kConsumers);  // every consumer thread
    }
    sm90::mbar_init(sm.kv, 1);
    sm90::fence_mbarrier_init();
  }
  __syncthreads();

  if (warp >= Tr::kNWarps) {
    // ---- producer warpgroup
    sm90::regs_dealloc<Tr::kProducerRegs>();
    const int role = warp - Tr::kNWarps;
    sm90::PairWalk w = first;
    int stage = 0;
    uint32_t phase = 0;
    auto advance = [&] {
      w.next();
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    };
    if (role == 0) {
      // Tiles: K and V once (kv), then each pair's Q and dO into its stage once both consumer warpgroups
      // released the pair two before.
      if (lane == 0 && pairs > 0) {
        sm90::mbar_arrive_expect_tx(sm.kv, 2 * kKVBytes);
#pragma unroll
        for (int c = 0; c < kD / 64; ++c) {
          sm90::tma_load_4d(smem_addr(sm.k + c * kN * 64), &a.k, sm.kv, c * 64, j0, hk, b);
          sm90::tma_load_4d(smem_addr(sm.v + c * kN * 64), &a.v, sm.kv, c * 64, j0, hk, b);
        }
#pragma unroll 1
        for (int k = 0; k < pairs; ++k, advance()) {
          sm90::ws_wait(sm.empty + 8 * stage, phase ^ 1, "empty (TMA lane)", k);
          const uint32_t full = sm.full + 8 * stage;
          sm90::mbar_arrive_expect_tx(full, 2 * kQBytes);
          E* dst = sm.q0 + stage * kStageElems;
#pragma unroll
          for (int c = 0; c < kD / 64; ++c) {
            sm90::tma_load_4d(smem_addr(dst + c * kM * 64), &a.q, full, c * 64, w.m * kM, w.h, b);
            sm90::tma_load_4d(smem_addr(dst + Tr::kSmemQElems + c * kM * 64), &a.dout, full, c * 64, w.m * kM, w.h, b);
          }
        }
      }
    } else if (role == 1) {
      // lse (log2 units; +inf past the end and for rows without keys: P = 0) and Dsum of each pair's rows.
#pragma unroll 1
      for (int k = 0; k < pairs; ++k, advance()) {
        sm90::ws_wait(sm.empty + 8 * stage, phase ^ 1, "empty (lse warp)", k);
#pragma unroll
        for (int r = lane; r < kM; r += 32) {
          const int i = w.m * kM + r;
          const bool in = i < sq.seq_q;
          const int64_t li = in ? sq.lse_index(f, b, w.h, i) : 0;
          sm.lse[stage * kM + r] = in ? lse_log2(f.lse[li]) : INFINITY;
          sm.dsum[stage * kM + r] = in ? p.dsum[li] : 0.f;
        }
        sm90::mbar_arrive(sm.full + 8 * stage);  // release: the stores above are visible to the waiters
      }
    } else if (role == 2) {
      // dQ: each pair's tile added into the workspace (rows past the sequence end fall outside the map);
      // the tile is handed back once the reduction has read it. Deterministic mode (p.dq_turns): this key
      // block adds its tile of query block m in its turn among the key blocks that see m (the last of them,
      // last_key_block_for_queries, goes first), and counts itself in once its additions are complete,
      // which waits for them while the consumers compute the next tile.
      const int m_blocks = (sq.seq_q + kM - 1) / kM;
      int* done = nullptr;  // the turn counter to count this CTA in, once the last additions complete
#pragma unroll 1
      for (int k = 0; k < pairs; ++k, advance()) {
        named_barrier_arrive(kDqEmptyBar, kDqBarThreads);
        if (lane == 0 && done != nullptr) {
          sm90::bulk_wait_group<0>();
          sm90::end_turn(done);
        }
        named_barrier_sync(kDqFullBar, kDqBarThreads);
        if (lane == 0) {
          if (p.dq_turns != nullptr) {
            done = p.dq_turns + (int64_t(b) * f.heads_q + w.h) * m_blocks + w.m;
            sm90::wait_turn(done, last_key_block_for_queries<kM, kN>(f, sq, w.m, off) - n_block);
          }
#pragma unroll
          for (int c = 0; c < kD / Tr::kDqBoxCols; ++c)
            sm90::tma_reduce_add_4d(&a.dq_accum, smem_addr(sm.dq + c * kM * Tr::kDqBoxCols), c * Tr::kDqBoxCols,
                                    w.m * kM, w.h, b);
          sm90::bulk_commit_group();
          sm90::bulk_wait_group_read<0>();
        }
        __syncwarp();
      }
      if (lane == 0) {
        sm90::bulk_wait_group<0>();
        if (done != nullptr) sm90::end_turn(done);
      }
    }
    return;
  }

  // ---- consumer warpgroups
  sm90::regs_alloc<Tr::kConsumerRegs>();
  const int g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2;  // keys wg * 64 .. wg * 64 + 63 of the block (warp w: keys 16w..16w+15)

  // Descriptors at stage 0, dS^T buffer 0 and the first k16 step, as in flash_bwd_sm90_kernel.h: K-major views
  // of this warpgroup's 64 rows of K and V and of the kM rows of Q and dO; MN-major views of Q and dO (dV/dK),
  // dS^T and K (this warpgroup's 64 dQ columns: K's second column block for warpgroup 1).
  const uint64_t desc_k = sm90::make_desc(smem_addr(sm.k) + wg * 64 * 128, 16, 1024);
  const uint64_t desc_v = sm90::make_desc(smem_addr(sm.v) + wg * 64 * 128, 16, 1024);
  const uint64_t desc_q = sm90::make_desc(smem_addr(sm.q0), 16, 1024);
  const uint64_t desc_q_mn = sm90::make_desc(smem_addr(sm.q0), kM * 128, 1024);
  // This warpgroup's part of each pair's dQ (bwd_sm90_tma_ws_traits.h): query rows dq_row0 .. dq_row0 + 63
  // (dS^T's 64-column block dq_row0 / 64) and columns dq_col0 .. dq_col0 + 63 (K's 64-column block dq_col0 / 64).
  constexpr bool kDqByRows = Tr::kDqRowSplits == 2;
  const int dq_row0 = kDqByRows ? wg * 64 : 0, dq_col0 = kDqByRows ? 0 : wg * Tr::kDqCols;
  const uint64_t desc_ds = sm90::make_desc(smem_addr(sm.ds0) + (dq_row0 / 64) * kN * 128, kN * 128, 1024);
  const uint64_t desc_k_mn = sm90::make_desc(smem_addr(sm.k) + (dq_col0 / 64) * kN * 128, kN * 128, 1024);
  constexpr uint32_t kStageUnits = kStageElems * 2 / 16;  // descriptor start-address units (16 bytes)
  constexpr uint32_t kDoUnits = Tr::kSmemQElems * 2 / 16;
  constexpr uint32_t kDsUnits = Tr::kSmemDsElems * 2 / 16;

  float acc_dk[kDT][4], acc_dv[kDT][4];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[dt][e] = acc_dv[dt][e] = 0.f;

  const BwdRowCtx rc{off, sq.seq_k, 0.f, 0u};  // no ALiBi or dropout here (tma_ws_declines)
  if (pairs > 0) sm90::ws_wait(sm.kv, 0, "K/V loads", 0);
  sm90::PairWalk cur = first;
  int stage = 0;
  uint32_t phase = 0;

#pragma unroll 1
  for (int k = 0; k < pairs; ++k, cur.next()) {
    const int i0 = cur.m * kM;
    sm90::ws_wait(sm.full + 8 * stage, phase, "full (consumer)", k);
    const float* lse_s = sm.lse + stage * kM;
    const float* dsum_s = sm.dsum + stage * kM;
    const uint32_t st_units = stage * kStageUnits;

    // ---- S^T = K Q^T and dP^T = V dO^T for this warpgroup's 64 keys, one commit group each: on plain tiles
    // P is computed while the dP^T GEMM still runs.
    const bool plain = plain_tile(f, rc, i0, kM, j0, kN);
    float st[kQT][4], dpt[kQT][4];
    // A boundary tile: the causal / window band and the key tail (grad_element without the score features
    // this kernel does not take).
    auto edge = [&] {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt) {
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
        const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + warp * 16 + g + 8 * (e >> 1);
          const int64_t diag = int64_t(i0 + nt * 8 + 2 * t + (e & 1)) + off;
          const bool visible = j < sq.seq_k && (f.window_right < 0 || j <= diag + f.window_right) &&
                               (f.window_left < 0 || j >= diag - f.window_left);
          const float pr = visible ? prob_plain(st[nt][e], (e & 1) ? l2.y : l2.x, f.score_mul) : 0.f;
          dpt[nt][e] = grad_plain(pr, dpt[nt][e], (e & 1) ? d2.y : d2.x);
          st[nt][e] = pr;
        }
      }
    };
    sm90::score_products<Tr>(st, dpt, plain, desc_k, desc_v, desc_q + st_units, desc_q + st_units + kDoUnits, lse_s,
                             dsum_s, f.score_mul, t, edge);

    // ---- P^T and dS^T as A fragments; dS^T also to shared memory for the dQ GEMM
    uint32_t pa[kMS][4], da[kMS][4];
    sm90::pack_a<Tr>(st, pa);
    sm90::pack_a<Tr>(dpt, da);
    sm90::store_ds_t<Tr>(sm.ds0 + (k & 1) * Tr::kSmemDsElems, da, warp * 16, g, t);

    // ---- dV += P^T dO, dK += dS^T Q
    sm90::dkdv_products<Tr>(acc_dv, acc_dk, pa, da, desc_q_mn + st_units + kDoUnits, desc_q_mn + st_units);

    named_barrier_sync(kConsumerBar, kConsumers);  // both warpgroups' dS^T rows are in shared memory
    // ---- dQ = dS K over the block's 128 keys, this warpgroup's 64 rows x 64 columns
    float dq[kDqT][4];
    sm90::fence_operands(dq);
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Tr::kDqKSteps; ++ks)
      Wgmma<E, Tr::kDqCols>::template ss<1, 1>(dq, desc_ds + (k & 1) * kDsUnits + ks * 128, desc_k_mn + ks * 128,
                                               ks > 0);
    sm90::wgmma_commit();
    sm90::wgmma_wait<1>();  // dV / dK: the stage's last readers
    sm90::mbar_arrive(sm.empty + 8 * stage);
    sm90::wgmma_wait<0>();
    sm90::fence_operands(dq);
    named_barrier_sync(kDqEmptyBar, kDqBarThreads);  // the previous pair's reduction has read the tile
    sm90::stage_dq_rows<kM>(sm.dq, dq, dq_row0 + (warp & 3) * 16, dq_col0, g, t);
    sm90::fence_proxy_async();  // the TMA reads the tile
    named_barrier_arrive(kDqFullBar, kDqBarThreads);
    sm90::fence_operands(pa);
    sm90::fence_operands(da);
    sm90::fence_operands(acc_dv);
    sm90::fence_operands(acc_dk);
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }

  // ---- epilogue: dK = scale * sum dS^T Q, dV = sum P^T dO in the output dtype, staged in K's and V's tiles
  // (free once both warpgroups' last dQ GEMM, which reads every key of K, has completed) and written out in
  // 16-byte row chunks by the consumers.
  named_barrier_sync(kConsumerBar, kConsumers);
  sm90::stage_key_rows<Tr, kN>(sm.k, acc_dk, p.scale, warp * 16, g, t);
  sm90::stage_key_rows<Tr, kN>(sm.v, acc_dv, 1.f, warp * 16, g, t);
  named_barrier_sync(kConsumerBar, kConsumers);
  sm90::store_tile_rows<Tr, kN>(p.dk, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride, sm.k, sq, b, hk, j0, f,
                                tid);
  sm90::store_tile_rows<Tr, kN>(p.dv, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride, sm.v, sq, b, hk, j0, f,
                                tid);
#endif
}

}  // namespace attn::flash
