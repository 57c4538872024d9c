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

#include "../fwd_params.h"
#include "../kernel_traits.h"
#include "../ptx.h"
#include "../row_state.h"
#include "../tile_io.h"
#include "fwd_sm90_traits.h"
#include "wgmma_ops.h"
#include "wgmma_sync.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads, Tr::kMinBlocks)
    flash_fwd_sm90_kernel(const __grid_constant__ FwdParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  using Op = MmaOp<E>;
  using IO = TileIO<Tr>;
  using GemmS = sm90::Wgmma<E, Tr::kBlockN>;
  using GemmO = sm90::Wgmma<E, Tr::kHeadDim>;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kNT = Tr::kNTiles, kDT = Tr::kDTiles;
  constexpr uint32_t kKVBytes = Tr::kSmemKVElems * 2;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  // Tiles on a 1024-byte boundary: the descriptors' swizzle is computed from absolute address bits.
  const uint32_t raw_addr = smem_addr(smem_raw);
  E* sQ = reinterpret_cast<E*>(smem_raw + ((1024u - (raw_addr & 1023u)) & 1023u));
  E* sK = sQ + Tr::kSmemQElems;                    // stage s at sK + s * kSmemKVElems
  E* sV = sK + Tr::kStages * Tr::kSmemKVElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2;  // warpgroup: rows wg*64 .. wg*64+63 of the tile
  int m_block = blockIdx.x;
  if (p.causal) m_block = p.m_blocks - 1 - m_block;  // heaviest row blocks first
  const int h = blockIdx.y, b = blockIdx.z;

  int seq_q = p.seqlen_q, seq_k = p.seqlen_k;
  int64_t q_start = 0, k_start = 0;
  if (p.cu_seqlens_q != nullptr) {
    q_start = p.cu_seqlens_q[b];
    seq_q = p.cu_seqlens_q[b + 1] - p.cu_seqlens_q[b];
    k_start = p.cu_seqlens_k[b];
    seq_k = p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b];
  }
  const int row0 = m_block * kM;
  if (row0 >= seq_q) return;
  const int hk = h / p.group;
  const int off = p.lower_right ? seq_k - seq_q : 0;
  const bool varlen = p.cu_seqlens_q != nullptr;

  const E* q_bh = static_cast<const E*>(p.q) + (varlen ? q_start * p.q_row_stride : b * p.q_batch_stride) +
                  h * p.q_head_stride;
  const E* k_bh = static_cast<const E*>(p.k) + (varlen ? k_start * p.k_row_stride : b * p.k_batch_stride) +
                  hk * p.k_head_stride;
  const E* v_bh = static_cast<const E*>(p.v) + (varlen ? k_start * p.v_row_stride : b * p.v_batch_stride) +
                  hk * p.v_head_stride;

  // Key-tile range: tiles entirely right of the causal / window band are skipped.
  const int last_row = min(row0 + kM, seq_q) - 1;
  int64_t j_end = seq_k;
  if (p.window_right >= 0) j_end = j_end < int64_t(last_row) + off + p.window_right + 1
                                       ? j_end
                                       : int64_t(last_row) + off + p.window_right + 1;
  const int n_end = j_end > 0 ? static_cast<int>((j_end + kN - 1) / kN) : 0;

  RowCtx rc;
  rc.base = row0 + warp * 16 + g;  // warp w of the CTA owns rows 16w..16w+15 (warpgroup wg: 64wg..64wg+63)
  rc.rows_total = seq_q;
  rc.group = 1;
  rc.off = off;
  rc.seq_k = seq_k;
  rc.bh0 = 0;
  rc.slopes = nullptr;

  // ---- Q, then K/V of the first (last-indexed) tile into stage 0
  IO::template load<kM>(
      sQ, [&](int row) -> const E* { return row0 + row < seq_q ? q_bh + (row0 + row) * p.q_row_stride : nullptr; },
      p.head_dim, p.aligned16, q_bh, tid);
  const int64_t k_rs = p.k_row_stride, v_rs = p.v_row_stride;
  auto load_kv = [&](int n, int stage) {
    IO::template load_rows<kN>(sK + stage * Tr::kSmemKVElems, k_bh + int64_t(n) * kN * k_rs, k_rs, seq_k - n * kN,
                               p.head_dim, p.aligned16, k_bh, tid);
    IO::template load_rows<kN>(sV + stage * Tr::kSmemKVElems, v_bh + int64_t(n) * kN * v_rs, v_rs, seq_k - n * kN,
                               p.head_dim, p.aligned16, v_bh, tid);
  };
  if (n_end > 0) load_kv(n_end - 1, 0);
  cp_async_commit();

  // Descriptors of stage 0 and the first k16 step; steps and stages are adds to the start-address field
  // (16-byte units). Q: this warpgroup's 64 rows of each 64-column block.
  const uint64_t desc_q = sm90::make_desc(smem_addr(sQ) + wg * 64 * 128, 16, 1024);
  const uint64_t desc_k = sm90::make_desc(smem_addr(sK), 16, 1024);
  const uint64_t desc_v = sm90::make_desc(smem_addr(sV), kN * 128, 1024);

  float acc_o[1][kDT][4];
  float row_max[1][2] = {{-INFINITY, -INFINITY}}, row_sum[1][2] = {{0.f, 0.f}};
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[0][dt][e] = 0.f;

#pragma unroll 1
  for (int n = n_end - 1, stage = 0; n >= 0; --n, stage ^= 1) {
    const int j0 = n * kN;
    cp_async_wait<0>();
    sm90::fence_proxy_async();
    __syncthreads();  // K_n, V_n landed for every thread; every warpgroup is done with stage ^ 1
    if (n > 0) load_kv(n - 1, stage ^ 1);
    cp_async_commit();

    // S = Q.K_n^T
    float s[1][kNT][4];
    sm90::fence_operands(s[0]);
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks) {
      // 16-byte units: 64-column block ks / 4 (rows x 128 bytes each), then 32 bytes per k16 step within it.
      const uint32_t q_step = (ks >> 2) * kM * 8 + (ks & 3) * 2, k_step = (ks >> 2) * kN * 8 + (ks & 3) * 2;
      GemmS::template ss<0>(s[0], desc_q + q_step, desc_k + stage * (kKVBytes >> 4) + k_step, ks > 0);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_operands(s[0]);

    const bool boundary = j0 + kN > seq_k ||
                          (p.window_right >= 0 && int64_t(j0) + kN - 1 > int64_t(row0) + off + p.window_right);
    if (boundary) mask_scores<false, 1, kNT, 1>(s, p, rc, j0, t);
    softmax_update<true>(s, acc_o, row_max, row_sum, p.score_mul);

    // P as A fragments: k16 step kk is columns 16kk..16kk+15 = n8 groups 2kk and 2kk+1.
    uint32_t pa[Tr::kPSteps][4];
#pragma unroll
    for (int kk = 0; kk < Tr::kPSteps; ++kk) {
      pa[kk][0] = Op::pack(s[0][2 * kk][0], s[0][2 * kk][1]);
      pa[kk][1] = Op::pack(s[0][2 * kk][2], s[0][2 * kk][3]);
      pa[kk][2] = Op::pack(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
      pa[kk][3] = Op::pack(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
    }

    // O += P.V_n (V MN-major: transposed B); 16 key rows per step = 2048 bytes.
    sm90::fence_operands(acc_o[0]);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kPSteps; ++kk)
      GemmO::template rs<1>(acc_o[0], pa[kk], desc_v + stage * (kKVBytes >> 4) + kk * 128);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_operands(acc_o[0]);
  }

  // ---- epilogue: normalize, logsumexp; O through the Q tile's rows of this warpgroup (its own wgmma reads
  // of them are complete), then 16-byte stores by the whole CTA.
  if (n_end == 0) {  // no key tile visible to any row: the loop never waited for the Q tile's copies
    cp_async_wait<0>();
    __syncthreads();
  }
  constexpr float kLn2 = 0.6931471805599453f;
  float lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = quad_sum(row_sum[0][r]);
    const bool empty = l == 0.f;  // no visible key: out 0, lse -inf (NaN inputs stay NaN)
    lse[r] = empty ? -INFINITY : row_max[0][r] * kLn2 + logf(l);
    const float o_scale = empty ? 0.f : 1.f / l;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
      acc_o[0][dt][2 * r] *= o_scale;
      acc_o[0][dt][2 * r + 1] *= o_scale;
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = warp * 16 + g + 8 * r;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
      *reinterpret_cast<uint32_t*>(sQ + swizzle_offset<Tr>(row, dt, kM) + 2 * t) =
          Op::pack(acc_o[0][dt][2 * r], acc_o[0][dt][2 * r + 1]);
    const int i = row0 + row;
    if (t == 0 && i < seq_q)
      p.lse[varlen ? h * p.lse_head_stride + q_start + i : b * p.lse_batch_stride + h * p.lse_head_stride + i] = lse[r];
  }
  __syncthreads();
  E* o_bh = static_cast<E*>(p.o) + (varlen ? q_start * p.o_row_stride : b * p.o_batch_stride) + h * p.o_head_stride;
  IO::template store<kM>(
      sQ, [&](int row) -> E* { return row0 + row < seq_q ? o_bh + (row0 + row) * p.o_row_stride : nullptr; },
      p.head_dim, p.aligned16, tid);
#endif
}

}  // namespace attn::flash
