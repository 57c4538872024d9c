// The Hopper forward kernel (FlashAttention-3's schedule on cp.async): both GEMMs on wgmma, the lean feature set,
// the work split by role so that the tensor cores are not idle while a warpgroup runs its softmax.
//   - One producer warpgroup loads K and V tiles into a ring of kStages stages of shared memory (cp.async,
//     completion signalled on the stage's 'full' mbarrier) as soon as both consumer warpgroups have released
//     the stage ('empty' mbarrier): the consumers never wait on a __syncthreads. With kSplitRelease, K and V
//     each have their own pair of mbarriers: K_n's buffer is released once S_n is done, V_n's once P_n.V_n is,
//     so the next K load starts a GEMM earlier (what a 2-stage ring, D 256, needs to keep a tile in flight).
//   - Two consumer warpgroups, 64 query rows each, take turns issuing their GEMMs (named barriers 2 and 3):
//     while one runs S = Q.K_n^T and O += P_{n+1}.V_{n+1} on the tensor cores, the other runs its softmax.
//   - Within a warpgroup, the P.V of the previous tile is issued together with this tile's Q.K^T and only
//     waited for after this tile's softmax has computed its row maxima and probabilities (O's rescale needs
//     it; nothing before does).
// Per key tile n, consumer warpgroup wg:
//   wait full[n] (and V's full[n+1]); wait for our turn; issue S_n = Q.K_n^T, issue O += P_{n+1}.V_{n+1}; hand
//   the turn over; wait S_n (release K_n); masks; probabilities; wait P.V; release V_{n+1}; rescale O; pack P_n
#pragma once
#include <cstdint>
#include <type_traits>

#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "attn/ptx.h"
#include "common/row_state.h"
#include "common/tile_io.h"
#include "attn/barriers.h"
#include "sm90/fwd_sm90_mma.h"
#include "sm90/fwd_sm90_traits.h"
#include "sm90/fwd_sm90_work.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kLaunchThreads, Tr::kMinBlocks)
    flash_fwd_sm90_ws_kernel(const __grid_constant__ FwdParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kNT = Tr::kNTiles, kDT = Tr::kDTiles;
  constexpr int kStages = Tr::kStages, kConsumers = Tr::kNThreads;
  constexpr uint32_t kKVUnits = Tr::kSmemKVElems * 2 / 16;  // one stage, in descriptor units (16 bytes)
  // Named barriers: 1 = the consumers' own (Q landed, O staged); 2 + wg = warpgroup wg's turn on the tensor cores.
  constexpr int kConsumerBar = 1, kTurnBar = 2;
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

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  sm90::CtaWork<E> w;
  if (!sm90::cta_work<Tr>(p, w)) return;
  const int n_end = w.n_end;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(full_bar + 8 * s, 128);           // the producer's threads, once their copies landed
      sm90::mbar_init(empty_bar + 8 * s, Tr::kNWarps);  // one lane per consumer warp, once its GEMMs are done
      if (kSplit) {
        sm90::mbar_init(v_full_bar + 8 * s, 128);
        sm90::mbar_init(v_empty_bar + 8 * s, Tr::kNWarps);
      }
    }
  }
  __syncthreads();  // barriers initialized; the only CTA-wide barrier (before the roles diverge)

  if (warp >= Tr::kNWarps) {
    // ---- producer warpgroup: K_n, V_n into the ring, n from the last tile down
    sm90::regs_dealloc<Tr::kProducerRegs>();
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
  TileIO<sm90::WithThreads<Tr, kConsumers>>::template load<kM>(
      sQ,
      [&](int row) -> const E* { return w.row0 + row < w.seq_q ? w.q_bh + (w.row0 + row) * p.q_row_stride : nullptr; },
      p.head_dim, p.aligned16, w.q_bh, tid);
  cp_async_commit();
  cp_async_wait<0>();
  sm90::fence_proxy_async();
  named_barrier_sync(kConsumerBar, kConsumers);

  const sm90::TileDescs desc = sm90::tile_descs<Tr>(sQ, sK, sV, wg);
  float acc_o[1][kDT][4], row_max[1][2], row_sum[1][2];
  sm90::init_rows<Tr>(acc_o, row_max, row_sum);
  float s[1][kNT][4];
  uint32_t pa[Tr::kPSteps][4];  // P of the previous tile, issued with this tile's Q.K^T

  // Turn-taking: warpgroup 0 issues first; after issuing its GEMMs each warpgroup hands the turn to the
  // other, except warpgroup 1 after its last tile (no turn follows it). Every named barrier then completes
  // as often as it is waited on, and none is left half-arrived when the CTA exits.
  // ATTN_SM90_WS_NO_TURNS (diagnostic builds only, tools/research/ws-race-probe.sh) compiles the turn-taking out,
  // so that compute-sanitizer's racecheck can be run with and without the named-barrier hand-offs.
#ifdef ATTN_SM90_WS_NO_TURNS
  constexpr bool kTurns = false;
#else
  constexpr bool kTurns = true;
#endif
  if (kTurns && wg == 1 && n_end > 0) named_barrier_arrive(kTurnBar, kConsumers);
  int stage = 0, prev_stage = 0;
  uint32_t phase = 0, prev_phase = 0;
  // One key tile; kPrev: the previous tile's P.V is issued with it (every tile but the first). A template
  // constant, not a branch, so that no control flow separates the batch's wgmma instructions.
  auto consume = [&](int n, auto prev_tag) {
    constexpr bool kPrev = decltype(prev_tag)::value;
    sm90::mbar_wait(full_bar + 8 * stage, phase);
    if constexpr (kSplit && kPrev) sm90::mbar_wait(v_full_bar + 8 * prev_stage, prev_phase);
    sm90::fence_proxy_async();
    if constexpr (kTurns) named_barrier_sync(kTurnBar + wg, kConsumers);
    sm90::fence_operands(s[0]);
    sm90::fence_operands(acc_o[0]);
    sm90::wgmma_fence();
    sm90::issue_qk<Tr>(s[0], desc.q, desc.k + stage * kKVUnits);
    sm90::wgmma_commit();
    if constexpr (kPrev) {
      sm90::issue_pv<Tr>(acc_o[0], pa, desc.v + prev_stage * kKVUnits);
      sm90::wgmma_commit();
    }
    if constexpr (kTurns) named_barrier_arrive_if(wg == 0 || n > 0, kTurnBar + (wg ^ 1), kConsumers);

    sm90::wgmma_wait<kPrev ? 1 : 0>();  // S_n (the older group); P.V may still run
    sm90::fence_operands(s[0]);
    if (kSplit && lane == 0) sm90::mbar_arrive(empty_bar + 8 * stage);  // K_n read
    if (sm90::boundary_tile<Tr>(p, w, n)) mask_scores<false, 1, kNT, 1>(s, p, rc, n * kN, t);
    float corr[1][2];
    softmax_probs<true>(s, row_max, row_sum, p.score_mul, corr);
    if constexpr (kPrev) {
      sm90::wgmma_wait<0>();
      sm90::fence_operands(acc_o[0]);
      if (lane == 0) sm90::mbar_arrive(v_empty_bar + 8 * prev_stage);
    }
    rescale_o(acc_o, corr);
    sm90::pack_p<Tr>(s[0], pa);
    prev_stage = stage;
    prev_phase = phase;
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  };
  if (n_end > 0) {
    consume(n_end - 1, std::false_type{});
#pragma unroll 1
    for (int n = n_end - 2; n >= 0; --n) consume(n, std::true_type{});
    // the last tile's P.V
    if constexpr (kSplit) sm90::mbar_wait(v_full_bar + 8 * prev_stage, prev_phase);
    sm90::fence_operands(acc_o[0]);
    sm90::wgmma_fence();
    sm90::issue_pv<Tr>(acc_o[0], pa, desc.v + prev_stage * kKVUnits);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_operands(acc_o[0]);
  }
  // The epilogue orders the staged O's writes (in the Q tile, which only the consumers use) before its reads
  // with the consumers' own barrier: no CTA-wide barrier in the role-divergent code (synccheck reports one). Every
  // named barrier of the turn-taking completes as often as it is waited on (warpgroup 0 takes no spare turn before
  // the epilogue), which keeps racecheck at 0 hazards.
  sm90::store_output<Tr, kConsumers>(p, w, acc_o, row_max, row_sum, sQ, tid,
                                     [] { named_barrier_sync(kConsumerBar, kConsumers); });
#endif
}

}  // namespace attn::flash
