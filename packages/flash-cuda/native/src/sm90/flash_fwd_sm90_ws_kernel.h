// The Hopper forward kernel (FlashAttention-3's schedule): both GEMMs on wgmma, the lean feature set, the work
// split by role so that the tensor cores are not idle while a warpgroup runs its softmax.
//   - One producer warpgroup loads K and V tiles into a ring of kStages stages of shared memory (completion
//     signalled on the stage's 'full' mbarrier) as soon as both consumer warpgroups have released the stage
//     ('empty' mbarrier): the consumers never wait on a __syncthreads. With kSplitRelease, K and V each have
//     their own pair of mbarriers: K_n's buffer is released once S_n is done, V_n's once P_n.V_n is, so the next
//     K load starts a GEMM earlier (what a 2-stage ring, D 256, needs to keep a tile in flight).
//   - Two load paths, chosen per call by the host (FwdSm90Args::tma, sm90/fwd_sm90_args.h): TMA, where one
//     elected producer thread loads Q (on its own mbarrier) and every K / V tile as 128-byte-swizzled boxes whose
//     bytes complete the stage's mbarrier, and the rest of the producer warpgroup exits; or cp.async by the
//     producer's 128 threads (Q by the consumers), for the calls a tensor map cannot describe (varlen, seqused_k,
//     misaligned tensors: rows past a sequence's end must read as zeros, which only a dense map's bounds give).
//     A tile with one consumer warpgroup (Tr::kTmaOnly, D 64 at two CTAs per SM) has the TMA path alone.
//   - Two consumer warpgroups, 64 query rows each, run the key loop of sm90/fwd_sm90_consumer.h (shared with the
//     fp8 kernel): they take turns issuing their GEMMs, and each overlaps the previous tile's P.V with this tile's
//     softmax (one warpgroup, kBlockM 64: no turns; the SM's other CTA is the one it shares the tensor cores
//     with). Gemms16 below is what is 16-bit about it.
#pragma once
#include <cstdint>

#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "attn/ptx.h"
#include "common/row_state.h"
#include "common/tile_io.h"
#include "attn/barriers.h"
#include "sm90/fwd_sm90_args.h"
#include "sm90/fwd_sm90_consumer.h"
#include "sm90/fwd_sm90_mma.h"
#include "sm90/fwd_sm90_traits.h"
#include "sm90/fwd_sm90_work.h"
#include "sm90/tma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

// The 16-bit GEMMs of sm90::consumer_key_loop: both on wgmma, S from Q and K in shared memory, O += P.V with P
// in registers (bf16 or fp16) and V MN-major; a ring stage is kSmemKVElems elements further.
template <typename Tr>
struct Gemms16 {
  static constexpr uint32_t kKVUnits = Tr::kSmemKVElems * 2 / 16;  // one stage, in descriptor units (16 bytes)
  sm90::TileDescs desc;
  __device__ __forceinline__ void qk(float (&s)[Tr::kNTiles][4], int stage) const {
    sm90::issue_qk<Tr>(s, desc.q, desc.k + stage * kKVUnits);
  }
  __device__ __forceinline__ void pv(float (&acc_o)[Tr::kDTiles][4], const uint32_t (&pa)[Tr::kPSteps][4],
                                     int stage) const {
    sm90::issue_pv<Tr>(acc_o, pa, desc.v + stage * kKVUnits);
  }
  __device__ __forceinline__ void pack(const float (&s)[Tr::kNTiles][4], uint32_t (&pa)[Tr::kPSteps][4]) const {
    sm90::pack_p<Tr>(s, pa);
  }
};

// The TMA producer (one thread): Q, then K_n and V_n from the last key tile down, each into its ring stage once
// the consumers released it. A box is 64 columns (128 bytes) x the tile's rows, so a tile of D columns is D / 64
// boxes, each landing as the column block the wgmma descriptors read; its bytes complete the stage's 'full'
// mbarrier, zero-filled past the tensor's rows and head dim (counted all the same).
template <typename Tr>
__device__ __forceinline__ void produce_tma(const FwdSm90Args& a, const sm90::CtaWork<typename Tr::Element>& w,
                                            uint32_t full_bar, uint32_t empty_bar, uint32_t v_full_bar,
                                            uint32_t v_empty_bar, uint32_t q_bar, const typename Tr::Element* sQ,
                                            const typename Tr::Element* sK, const typename Tr::Element* sV) {
  constexpr int kN = Tr::kBlockN, kStages = Tr::kStages, kBoxes = Tr::kHeadDim / 64;
  constexpr uint32_t kQBytes = Tr::kSmemQElems * 2, kKVBytes = Tr::kSmemKVElems * 2;
  constexpr bool kSplit = Tr::kSplitRelease;
  const int hk = w.h / a.p.group;
  sm90::prefetch_tensormap(&a.k);
  sm90::prefetch_tensormap(&a.v);
  sm90::mbar_arrive_expect_tx(q_bar, kQBytes);
#pragma unroll
  for (int c = 0; c < kBoxes; ++c)
    sm90::tma_load_4d(smem_addr(sQ + c * Tr::kBlockM * 64), &a.q, q_bar, c * 64, w.row0, w.h, w.b);
  int stage = 0;
  uint32_t phase = 0;
#pragma unroll 1
  for (int n = w.n_end - 1; n >= 0; --n) {
    sm90::mbar_wait(empty_bar + 8 * stage, phase ^ 1);  // both warpgroups done with the tile kStages before
    // Without kSplit, K and V share the stage's one 'full' mbarrier (v_full_bar == full_bar): one arrival
    // expects both tiles' bytes.
    sm90::mbar_arrive_expect_tx(full_bar + 8 * stage, kSplit ? kKVBytes : 2 * kKVBytes);
#pragma unroll
    for (int c = 0; c < kBoxes; ++c)
      sm90::tma_load_4d(smem_addr(sK + stage * Tr::kSmemKVElems + c * kN * 64), &a.k, full_bar + 8 * stage, c * 64,
                        n * kN, hk, w.b);
    if (kSplit) {
      sm90::mbar_wait(v_empty_bar + 8 * stage, phase ^ 1);
      sm90::mbar_arrive_expect_tx(v_full_bar + 8 * stage, kKVBytes);
    }
#pragma unroll
    for (int c = 0; c < kBoxes; ++c)
      sm90::tma_load_4d(smem_addr(sV + stage * Tr::kSmemKVElems + c * kN * 64), &a.v, v_full_bar + 8 * stage, c * 64,
                        n * kN, hk, w.b);
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
}

template <typename Tr>
__global__ void __launch_bounds__(Tr::kLaunchThreads, Tr::kMinBlocks)
    flash_fwd_sm90_ws_kernel(const __grid_constant__ FwdSm90Args a) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const FwdParams& p = a.p;
  using E = typename Tr::Element;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kDT = Tr::kDTiles;
  constexpr int kStages = Tr::kStages, kConsumers = Tr::kNThreads;
  // Named barriers: 1 = the consumers' own (Q landed, O staged); sm90::kTurnBar + wg = warpgroup wg's turn on the
  // tensor cores (fwd_sm90_consumer.h).
  constexpr int kConsumerBar = 1;
  dependent_launch_prologue();  // before any global access (common/dependent_launch.h)

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const uint32_t raw_addr = smem_addr(smem_raw);
  E* sQ = reinterpret_cast<E*>(smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u));
  E* sK = sQ + Tr::kSmemQElems;  // stage s at sK + s * kSmemKVElems
  E* sV = sK + kStages * Tr::kSmemKVElems;
  const uint32_t full_bar = smem_addr(sV + kStages * Tr::kSmemKVElems);  // kStages mbarriers, 8 bytes each
  const uint32_t empty_bar = full_bar + kStages * 8;
  constexpr bool kSplit = Tr::kSplitRelease;
  const uint32_t v_full_bar = kSplit ? empty_bar + kStages * 8 : full_bar;
  const uint32_t v_empty_bar = kSplit ? v_full_bar + kStages * 8 : empty_bar;
  const uint32_t q_bar = full_bar + (kSplit ? 4 : 2) * kStages * 8;  // TMA only: Q landed
  static_assert(((kSplit ? 4 : 2) * kStages + 1) * 8 <= Tr::bar_bytes(kStages), "the mbarriers fit their area");

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  sm90::CtaWork<E> w;
  if (!sm90::cta_work<Tr>(p, w)) return;
  const int n_end = w.n_end;
  const bool tma = Tr::kTmaOnly || a.tma;  // kTmaOnly: the host launches it only where the maps apply
  if (tid == 0) {
    // 'full': the producer's 128 threads once their copies landed, or the TMA thread's one arrival with the
    // tile's bytes expected. 'empty': one lane per consumer warp, once its GEMMs are done.
    const uint32_t fills = tma ? 1 : 128;
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(full_bar + 8 * s, fills);
      sm90::mbar_init(empty_bar + 8 * s, Tr::kNWarps);
      if (kSplit) {
        sm90::mbar_init(v_full_bar + 8 * s, fills);
        sm90::mbar_init(v_empty_bar + 8 * s, Tr::kNWarps);
      }
    }
    sm90::mbar_init(q_bar, 1);
    sm90::fence_mbarrier_init();
  }
  __syncthreads();  // barriers initialized; the only CTA-wide barrier (before the roles diverge)

  if (warp >= Tr::kNWarps) {
    // ---- producer warpgroup: K_n, V_n into the ring, n from the last tile down
    sm90::regs_dealloc<Tr::kProducerRegs>();
    if (tma) {
      if (tid == kConsumers) produce_tma<Tr>(a, w, full_bar, empty_bar, v_full_bar, v_empty_bar, q_bar, sQ, sK, sV);
      return;
    }
    using IO = TileIO<sm90::WithThreads<Tr, 128>>;
    const int ptid = tid - kConsumers;
    const int64_t k_rs = p.k_row_stride, v_rs = p.v_row_stride;
    int stage = 0;
    uint32_t phase = 0;
    // Misaligned tensors are stored element-wise (st.shared, no cp.async): a plain arrive releases those.
    auto filled = [&](uint32_t bar) {
      if (p.aligned16) {
        sm90::cp_async_mbar_arrive(bar);
      } else {
        sm90::mbar_arrive(bar);
      }
    };
#pragma unroll 1
    for (int n = n_end - 1; n >= 0; --n) {
      sm90::mbar_wait(empty_bar + 8 * stage, phase ^ 1);  // both warpgroups done with the tile kStages before
      IO::template load_rows<kN>(sK + stage * Tr::kSmemKVElems, w.k_bh + int64_t(n) * kN * k_rs, k_rs, w.seq_k - n * kN,
                                 p.head_dim, p.aligned16, w.k_bh, ptid);
      if (kSplit) {
        filled(full_bar + 8 * stage);
        sm90::mbar_wait(v_empty_bar + 8 * stage, phase ^ 1);
      }
      IO::template load_rows<kN>(sV + stage * Tr::kSmemKVElems, w.v_bh + int64_t(n) * kN * v_rs, v_rs, w.seq_k - n * kN,
                                 p.head_dim, p.aligned16, w.v_bh, ptid);
      filled(v_full_bar + 8 * stage);
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
  if (tma) {
    sm90::mbar_wait(q_bar, 0);
  } else {
    TileIO<sm90::WithThreads<Tr, kConsumers>>::template load<kM>(
        sQ,
        [&](int row) -> const E* {
          return w.row0 + row < w.seq_q ? w.q_bh + (w.row0 + row) * p.q_row_stride : nullptr;
        },
        p.head_dim, p.aligned16, w.q_bh, tid);
    cp_async_commit();
    cp_async_wait<0>();
    sm90::fence_proxy_async();
    named_barrier_sync(kConsumerBar, kConsumers);
  }

  // ATTN_SM90_WS_NO_TURNS (diagnostic builds only, tools/research/ws-race-probe.sh) compiles the turn-taking out,
  // so that compute-sanitizer's racecheck can be run with and without the named-barrier hand-offs.
#ifdef ATTN_SM90_WS_NO_TURNS
  constexpr bool kTurns = false;
#else
  constexpr bool kTurns = Tr::kNWarpGroups == 2;  // one warpgroup: nobody to take turns with
#endif
  const sm90::TileDescs desc = sm90::tile_descs<Tr>(sQ, sK, sV, wg);
  float acc_o[1][kDT][4], row_max[1][2], row_sum[1][2];
  sm90::init_rows<Tr>(acc_o, row_max, row_sum);
  sm90::consumer_key_loop<Tr, kSplit, kTurns>(p, w, rc, {full_bar, empty_bar, v_full_bar, v_empty_bar},
                                              Gemms16<Tr>{desc}, wg, lane, t, acc_o, row_max, row_sum);
  // The epilogue orders the staged O's writes (in the Q tile, which only the consumers use) before its reads
  // with the consumers' own barrier: no CTA-wide barrier in the role-divergent code (synccheck reports one). Every
  // named barrier of the turn-taking completes as often as it is waited on (warpgroup 0 takes no spare turn before
  // the epilogue), which keeps racecheck at 0 hazards.
  sm90::store_output<Tr, kConsumers>(p, w, acc_o, row_max, row_sum, sQ, tid,
                                     [] { named_barrier_sync(kConsumerBar, kConsumers); });
#endif
}

}  // namespace attn::flash
