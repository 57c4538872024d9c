// The Hopper forward kernel: FlashAttention-2's algorithm with both GEMMs on wgmma (sm_90a), the warpgroup
// MMA that reaches Hopper's full tensor-core rate (mma.sync, the sm80 kernel's instruction, tops out well
// below it). The lean feature set of the sm80 kernel's 'lean' variant: causal (both alignments) and the
// right window bound, varlen, GQA/MQA (one query head per CTA); no split-KV, no packed GQA (decode and
// short queries stay on the sm80 kernels), no ALiBi / softcap / dropout / left window (those calls stay
// on the sm80 kernels too). dispatch.cu only picks it where all of that holds.
//
// One CTA: kBlockM query rows of one (batch, head), one warpgroup per 64 rows. Per key tile n (walked from
// the last tile down, so the boundary tiles come first), with K_n and V_n in stage st:
//   wait for K_n, V_n; barrier; issue K_{n-1}, V_{n-1} into stage st ^ 1 (cp.async, overlaps everything below)
//   S = Q.K_n^T         wgmma, A = Q and B = K from shared memory (both K-major)
//   masks (boundary tiles only), online softmax in registers (exp2, scale folded in), P packed to A fragments
//   O += P.V_n          wgmma, A = P from registers, B = V from shared memory (MN-major: transposed)
// The accumulator layout of wgmma.m64nNk16 is mma.m16n8k16's per warp (16 rows per warp, n8 column groups),
// so the softmax, masks and epilogue are the sm80 kernel's (row_state.h) with one 16-row tile per thread.
#pragma once
#include <cstdint>

#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "attn/ptx.h"
#include "common/row_state.h"
#include "common/tile_io.h"
#include "sm90/fwd_sm90_mma.h"
#include "sm90/fwd_sm90_traits.h"
#include "sm90/fwd_sm90_work.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads, Tr::kMinBlocks)
    flash_fwd_sm90_kernel(const __grid_constant__ FwdParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kNT = Tr::kNTiles, kDT = Tr::kDTiles;
  constexpr uint32_t kKVBytes = Tr::kSmemKVElems * 2;
  dependent_launch_prologue();  // before any global access (common/dependent_launch.h)

  extern __shared__ __align__(128) unsigned char smem_raw[];
  // Tiles on a 1024-byte boundary: the descriptors' swizzle is computed from absolute address bits.
  const uint32_t raw_addr = smem_addr(smem_raw);
  E* sQ = reinterpret_cast<E*>(smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u));
  E* sK = sQ + Tr::kSmemQElems;  // stage s at sK + s * kSmemKVElems
  E* sV = sK + Tr::kStages * Tr::kSmemKVElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2;  // warpgroup: rows wg*64 .. wg*64+63 of the tile
  sm90::CtaWork<E> w;
  if (!sm90::cta_work<Tr>(p, w)) return;
  const int row0 = w.row0, seq_q = w.seq_q, seq_k = w.seq_k, n_end = w.n_end;
  const RowCtx rc = sm90::row_ctx<Tr>(w, warp, g);

  // ---- Q, then K/V of the first (last-indexed) tile into stage 0
  IO::template load<kM>(
      sQ, [&](int row) -> const E* { return row0 + row < seq_q ? w.q_bh + (row0 + row) * p.q_row_stride : nullptr; },
      p.head_dim, p.aligned16, w.q_bh, tid);
  const int64_t k_rs = p.k_row_stride, v_rs = p.v_row_stride;
  auto load_kv = [&](int n, int stage) {
    IO::template load_rows<kN>(sK + stage * Tr::kSmemKVElems, w.k_bh + int64_t(n) * kN * k_rs, k_rs, seq_k - n * kN,
                               p.head_dim, p.aligned16, w.k_bh, tid);
    IO::template load_rows<kN>(sV + stage * Tr::kSmemKVElems, w.v_bh + int64_t(n) * kN * v_rs, v_rs, seq_k - n * kN,
                               p.head_dim, p.aligned16, w.v_bh, tid);
  };
  if (n_end > 0) load_kv(n_end - 1, 0);
  cp_async_commit();

  const sm90::TileDescs desc = sm90::tile_descs<Tr>(sQ, sK, sV, wg);
  float acc_o[1][kDT][4], row_max[1][2], row_sum[1][2];
  sm90::init_rows<Tr>(acc_o, row_max, row_sum);

#pragma unroll 1
  for (int n = n_end - 1, stage = 0; n >= 0; --n, stage ^= 1) {
    const int j0 = n * kN;
    cp_async_wait<0>();
    sm90::fence_proxy_async();
    __syncthreads();  // K_n, V_n landed for every thread; every warpgroup is done with stage ^ 1
    if (n > 0) load_kv(n - 1, stage ^ 1);
    cp_async_commit();

    float s[1][kNT][4];
    sm90::fence_operands(s[0]);
    sm90::wgmma_fence();
    sm90::issue_qk<Tr>(s[0], desc.q, desc.k + stage * (kKVBytes >> 4));
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_operands(s[0]);

    if (sm90::boundary_tile<Tr>(p, w, n)) mask_scores<false, 1, kNT, 1>(s, p, rc, j0, t);
    softmax_update<true>(s, acc_o, row_max, row_sum, p.score_mul);
    uint32_t pa[Tr::kPSteps][4];
    sm90::pack_p<Tr>(s[0], pa);

    sm90::fence_operands(acc_o[0]);
    sm90::wgmma_fence();
    sm90::issue_pv<Tr>(acc_o[0], pa, desc.v + stage * (kKVBytes >> 4));
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_operands(acc_o[0]);
  }

  // ---- epilogue
  if (n_end == 0) {  // no key tile visible to any row: the loop never waited for the Q tile's copies
    cp_async_wait<0>();
    __syncthreads();
  }
  sm90::store_output<Tr, Tr::kNThreads>(p, w, acc_o, row_max, row_sum, sQ, tid, [] { __syncthreads(); });
#endif
}

}  // namespace attn::flash
