// The consumer warpgroups' key loop of the Hopper forward kernels (16-bit: flash_fwd_sm90_ws_kernel.h; fp8:
// flash_fwd_sm90_fp8_kernel.h): one schedule, the GEMMs and P's packing from the caller's policy.
//   - The two consumer warpgroups take turns issuing their GEMMs (named barriers kTurnBar + wg): while one runs
//     S = Q.K_n^T and O += P_{n+1}.V_{n+1} on the tensor cores, the other runs its softmax.
//   - Within a warpgroup, the P.V of the previous tile is issued together with this tile's Q.K^T and only
//     waited for after this tile's softmax has computed its row maxima and probabilities (O's rescale needs
//     it; nothing before does).
// Per key tile n, from the last tile down, consumer warpgroup wg:
//   wait full[n] (and V's full[n+1]); wait for our turn; issue S_n = Q.K_n^T, issue O += P_{n+1}.V_{n+1}; hand
//   the turn over; wait S_n (release K_n); masks; probabilities; wait P.V; release V_{n+1}; rescale O; pack P_n
// The ring: kStages stages, each with 'full' and 'empty' mbarriers for K and (kSplit) for V of their own, so
// that K_n's buffer goes back to the producer once S_n is done and V_n's once P_n.V_n is; without kSplit one
// pair per stage (RingBars' V members equal the K ones) released after P.V. Every named barrier of the turns
// completes as often as it is waited on: warpgroup 1 arrives first, each warpgroup hands the turn over after
// issuing, except warpgroup 1 after its last tile, so none is left half-arrived when the CTA exits.
#pragma once
#include <cstdint>
#include <type_traits>

#include "attn/barriers.h"
#include "attn/ptx.h"
#include "common/fwd_params.h"
#include "common/row_state.h"
#include "sm90/fwd_sm90_mma.h"
#include "sm90/fwd_sm90_work.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash::sm90 {

// The ring's mbarriers: kStages each, 8 bytes apart (shared-memory addresses).
struct RingBars {
  uint32_t k_full, k_empty, v_full, v_empty;
};

// Named barrier ids of the turns: kTurnBar + wg is warpgroup wg's (1 is the consumers' own, in the kernels).
constexpr int kTurnBar = 2;

// Gemms: qk(s, stage) issues S = Q.K^T of ring stage `stage`; pv(acc_o, pa, stage) issues O += P.V of it;
// pack(s, pa) turns the probabilities into P's A fragments. kTurns false (diagnostic builds only) compiles the
// turn-taking out. On return O holds every visible key's contribution (unnormalized), row_max / row_sum the
// softmax's state.
template <typename Tr, bool kSplit, bool kTurns, typename W, typename Gemms>
__device__ __forceinline__ void consumer_key_loop(const FwdParams& p, const W& w, const RowCtx& rc,
                                                  const RingBars& bars, const Gemms& gemms, int wg, int lane, int t,
                                                  float (&acc_o)[1][Tr::kDTiles][4], float (&row_max)[1][2],
                                                  float (&row_sum)[1][2]) {
  constexpr int kN = Tr::kBlockN, kNT = Tr::kNTiles, kStages = Tr::kStages, kConsumers = Tr::kNThreads;
  const int n_end = w.n_end;
  float s[1][kNT][4];
  uint32_t pa[Tr::kPSteps][4];  // P of the previous tile, issued with this tile's Q.K^T
  if (kTurns && wg == 1 && n_end > 0) named_barrier_arrive(kTurnBar, kConsumers);
  int stage = 0, prev_stage = 0;
  uint32_t phase = 0, prev_phase = 0;
  // One key tile; kPrev: the previous tile's P.V is issued with it (every tile but the first). A template
  // constant, not a branch, so that no control flow separates the batch's wgmma instructions.
  auto consume = [&](int n, auto prev_tag) {
    constexpr bool kPrev = decltype(prev_tag)::value;
    mbar_wait(bars.k_full + 8 * stage, phase);
    if constexpr (kSplit && kPrev) mbar_wait(bars.v_full + 8 * prev_stage, prev_phase);
    fence_proxy_async();
    if constexpr (kTurns) named_barrier_sync(kTurnBar + wg, kConsumers);
    fence_operands(s[0]);
    fence_operands(acc_o[0]);
    wgmma_fence();
    gemms.qk(s[0], stage);
    wgmma_commit();
    if constexpr (kPrev) {
      gemms.pv(acc_o[0], pa, prev_stage);
      wgmma_commit();
    }
    if constexpr (kTurns) named_barrier_arrive_if(wg == 0 || n > 0, kTurnBar + (wg ^ 1), kConsumers);

    wgmma_wait<kPrev ? 1 : 0>();  // S_n (the older group); P.V may still run
    fence_operands(s[0]);
    if (kSplit && lane == 0) mbar_arrive(bars.k_empty + 8 * stage);  // K_n read
    if (boundary_tile<Tr>(p, w, n)) mask_scores<false, 1, kNT, 1>(s, p, rc, n * kN, t);
    float corr[1][2];
    softmax_probs<true>(s, row_max, row_sum, p.score_mul, corr);
    if constexpr (kPrev) {
      wgmma_wait<0>();
      fence_operands(acc_o[0]);
      if (lane == 0) mbar_arrive(bars.v_empty + 8 * prev_stage);
    }
    rescale_o(acc_o, corr);
    gemms.pack(s[0], pa);
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
    if constexpr (kSplit) mbar_wait(bars.v_full + 8 * prev_stage, prev_phase);
    fence_operands(acc_o[0]);
    wgmma_fence();
    gemms.pv(acc_o[0], pa, prev_stage);
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(acc_o[0]);
  }
}

}  // namespace attn::flash::sm90
