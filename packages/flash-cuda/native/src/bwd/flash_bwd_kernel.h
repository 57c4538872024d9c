// The dK/dV kernel of the backward (FlashAttention-2's flash_bwd_dq_dk_dv_loop_seqk_parallel, written
// with the forward's inline PTX, swizzle and tile I/O). One CTA: kBlockN keys of one (batch, KV head),
// and, above D = 128, one of two halves of the dK/dV columns. It walks every query head of the KV
// head's group (GQA/MQA: dK and dV are summed over the group in registers, no workspace) and every
// query block that sees one of its keys (causal / window bands skip the rest):
//   prefetch Q, dO of the next (head, block) pair     (cp.async into the other stage when two fit in
//                                                       shared memory, p.stages == 2; else behind the dQ part)
//   S^T = K Q_m^T, dP^T = V dO_m^T                     (warps own 16 keys; mma.sync m16n8k16)
//   P, dS elementwise (bwd_scores.h)                   (recompute from lse, dropout replay, softcap)
//   dV += (P Z)^T dO_m, dK += dS^T Q_m                 (P^T, dS^T from registers; ldmatrix.trans)
//   default mode: dS^T -> smem; dQ_m += dS K           (fp32 atomics into the dQ workspace)
// Epilogue: dK * scale and dV straight from registers into the output dtype.
#pragma once
#include <cstdint>

#include "common/bwd_params.h"
#include "bwd/bwd_gemm.h"
#include "bwd/bwd_scores.h"
#include "bwd/bwd_traits.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/seq_extents.h"
#include "common/tile_io.h"

namespace attn::flash {

// This CTA's sequence extents (varlen: from cu_seqlens; seq_k: seqused_k[b] where given, the keys the
// row uses; run_bwd_zero_unused_keys writes the gradients of the others).
struct BwdSeq {
  int seq_q, seq_k;
  int64_t q_start, k_start;
  bool varlen;
  __device__ __forceinline__ BwdSeq(const FwdParams& f, int b) {
    varlen = f.cu_seqlens_q != nullptr;
    const SeqExtents e = seq_extents(f, b);  // clamped into the tensors (seq_extents.h)
    seq_q = e.seq_q;
    seq_k = e.seq_k;
    q_start = e.q_start;
    k_start = e.k_start;
  }
  // Element offset of row i of (b, h) in a tensor with these strides.
  __device__ __forceinline__ int64_t q_row(int b, int h, int i, int64_t bs, int64_t hs, int64_t rs) const {
    return (varlen ? (q_start + i) * rs : b * bs + i * rs) + h * hs;
  }
  __device__ __forceinline__ int64_t k_row(int b, int h, int j, int64_t bs, int64_t hs, int64_t rs) const {
    return (varlen ? (k_start + j) * rs : b * bs + j * rs) + h * hs;
  }
  // Index of row i of head h in lse-shaped buffers (lse, Dsum, the dQ workspace).
  __device__ __forceinline__ int64_t lse_index(const FwdParams& f, int b, int h, int i) const {
    return varlen ? h * f.lse_head_stride + q_start + i : b * f.lse_batch_stride + h * f.lse_head_stride + i;
  }
};

// kRows rows of one head into a swizzled tile: query rows i0.. (bounded by seq_q) or key rows j0..
// (bounded by seq_k) of a [B, H, S, D] or varlen tensor with strides (bs, hs, rs); rows past the sequence
// end are zero-filled. Shared by every backward kernel's Q, dO, K and V loads.
template <typename IO, int kRows, typename E>
__device__ __forceinline__ void load_query_rows(E* dst, const E* base, const BwdSeq& sq, int b, int h, int i0,
                                                int64_t bs, int64_t hs, int64_t rs, const FwdParams& f, int tid) {
  IO::template load<kRows>(
      dst,
      [&](int row) -> const E* {
        const int i = i0 + row;
        return i < sq.seq_q ? base + sq.q_row(b, h, i, bs, hs, rs) : nullptr;
      },
      f.head_dim, f.aligned16, base, tid);
}
template <typename IO, int kRows, typename E>
__device__ __forceinline__ void load_key_rows(E* dst, const E* base, const BwdSeq& sq, int b, int h, int j0, int64_t bs,
                                              int64_t hs, int64_t rs, const FwdParams& f, int tid) {
  IO::template load<kRows>(
      dst,
      [&](int row) -> const E* {
        const int j = j0 + row;
        return j < sq.seq_k ? base + sq.k_row(b, h, j, bs, hs, rs) : nullptr;
      },
      f.head_dim, f.aligned16, base, tid);
}

// The query blocks [begin, end) of kM rows that hold a row seeing a key of [j0, j0 + kN):
// j <= i + off + right and j >= i + off - left. Shared by the row-tiled and 2-D tiled dK/dV kernels.
struct QueryBlocks {
  int begin, end;
};
template <int kM, int kN>
__device__ __forceinline__ QueryBlocks query_blocks_for_keys(const FwdParams& f, const BwdSeq& sq, int j0, int off) {
  int64_t i_begin = 0, i_end = sq.seq_q;
  if (f.window_right >= 0) i_begin = max(int64_t(0), int64_t(j0) - off - f.window_right);
  if (f.window_left >= 0) i_end = min(i_end, int64_t(j0) + kN - 1 - off + f.window_left + 1);
  const int begin = static_cast<int>(i_begin / kM);
  return {begin, i_end > i_begin ? static_cast<int>((i_end + kM - 1) / kM) : begin};
}

// The inverse, from above: the last key block whose query_blocks_for_keys range holds query block m, or -1 where
// none does. Key block n's range holds m when its first block, (n kN - off - right) / kM, is at most m, its range is
// not empty (n kN - off - right < seq_q) and its keys exist (n kN < seq_k): n <= (min((m + 1) kM, seq_q) - 1 + off +
// right) / kN with a right window bound (causal is right = 0), and n <= (seq_k - 1) / kN. The key blocks whose range
// holds m are consecutive (both ends of the range grow with the key block) and end here. (Where the left bound
// leaves m out of this block's range too, no key block's range holds it.)
template <int kM, int kN>
__device__ __forceinline__ int last_key_block_for_queries(const FwdParams& f, const BwdSeq& sq, int m, int off) {
  int64_t j_last = int64_t(sq.seq_k) - 1;
  if (f.window_right >= 0) j_last = min(j_last, int64_t(min((m + 1) * kM, sq.seq_q)) - 1 + off + f.window_right);
  return j_last < 0 ? -1 : static_cast<int>(j_last / kN);
}

// The K and V rows [j0, j0 + kN) of key head hk into their tiles, as one committed cp.async group: what a
// dK/dV kernel's CTA keeps for its whole loop.
template <typename IO, int kN, typename E>
__device__ __forceinline__ void load_kv_tiles(E* sK, E* sV, const FwdParams& f, const BwdSeq& sq, int b, int hk, int j0,
                                              int tid) {
  load_key_rows<IO, kN>(sK, static_cast<const E*>(f.k), sq, b, hk, j0, f.k_batch_stride, f.k_head_stride,
                        f.k_row_stride, f, tid);
  load_key_rows<IO, kN>(sV, static_cast<const E*>(f.v), sq, b, hk, j0, f.v_batch_stride, f.v_head_stride,
                        f.v_row_stride, f, tid);
  cp_async_commit();
}

// One (query head h, query block i0) pair of a dK/dV kernel's loop: issues the cp.async copies of its Q
// and dO rows into q_dst (dO right after Q), and reads the lse (log2 units) and Dsum of row i0 + tid into
// lse_next / dsum_next for threads tid < kM (stored to shared memory one iteration later, so that their
// latency hides behind the current pair's math too).
template <typename Tr, typename E>
__device__ __forceinline__ void prefetch_pair(E* q_dst, const BwdParams& p, const BwdSeq& sq, int b, int h, int i0,
                                              int tid, float& lse_next, float& dsum_next) {
  using IO = TileIO<Tr>;
  constexpr int kM = Tr::kBlockM;
  const FwdParams& f = p.f;
  load_query_rows<IO, kM>(q_dst, static_cast<const E*>(f.q), sq, b, h, i0, f.q_batch_stride, f.q_head_stride,
                          f.q_row_stride, f, tid);
  load_query_rows<IO, kM>(q_dst + Tr::kSmemQElems, static_cast<const E*>(p.dout), sq, b, h, i0, p.do_batch_stride,
                          p.do_head_stride, p.do_row_stride, f, tid);
  cp_async_commit();
  if (tid < kM) {
    const int i = i0 + tid;
    const bool in = i < sq.seq_q;
    const int64_t li = in ? sq.lse_index(f, b, h, i) : 0;
    lse_next = in ? lse_log2(f.lse[li]) : INFINITY;
    dsum_next = in ? p.dsum[li] : 0.f;
  }
}

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads) flash_bwd_dkdv_kernel(const __grid_constant__ BwdParams p) {
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  using Ds = typename Tr::DsRows;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN;
  constexpr int kQT = Tr::kQTiles, kKS = Tr::kKSteps, kMS = Tr::kMSteps, kDkvT = Tr::kDkvTiles;
  const FwdParams& f = p.f;

  // Shared memory: K, V, dS^T, lse and Dsum (two slots each), then p.stages stages of (Q, dO).
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* sK = reinterpret_cast<E*>(smem_raw);
  E* sV = sK + Tr::kSmemKVElems;
  E* sdS = sV + Tr::kSmemKVElems;
  float* sLse = reinterpret_cast<float*>(sdS + Tr::kSmemDsElems);  // [2][kM]
  float* sDsum = sLse + 2 * kM;                                    // [2][kM]
  E* sQ0 = reinterpret_cast<E*>(sDsum + 2 * kM);                   // stage s: Q at sQ0 + s * kStageElems, dO after it
  constexpr int kStageElems = 2 * Tr::kSmemQElems;
  constexpr uint32_t kStageBytes = kStageElems * 2;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int col_split = blockIdx.x % Tr::kColSplits;
  const int n_block = blockIdx.x / Tr::kColSplits;
  const int hk = blockIdx.y, b = blockIdx.z;
  const BwdSeq sq(f, b);
  const int j0 = n_block * kN;
  if (j0 >= sq.seq_k) return;
  const int off = f.lower_right ? sq.seq_k - sq.seq_q : 0;
  const int col0 = col_split * Tr::kDkvCols;  // first dK/dV column of this CTA

  const QueryBlocks qb = query_blocks_for_keys<kM, kN>(f, sq, j0, off);
  const int m_begin = qb.begin, m_end = qb.end;

  // ---- K and V tiles of this CTA's keys, for the whole loop
  load_kv_tiles<IO, kN>(sK, sV, f, sq, b, hk, j0, tid);

  // Per-lane ldmatrix coordinates: A operands (rows = keys) from K, V; B from Q, dO (rows = queries,
  // plain for the K/V-rows GEMMs, .trans for the D-columns GEMMs); dS^T as the A operand of dQ (.trans).
  const LdsmAddr<Tr, kN> lk_a(smem_addr(sK), lane & 15, lane >> 4);
  const LdsmAddr<Tr, kN> lv_a(smem_addr(sV), lane & 15, lane >> 4);
  // Q and dO addressing for stage 0; stage s adds s * kStageBytes to base.
  const LdsmAddr<Tr, kM> lq_b(smem_addr(sQ0), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  const LdsmAddr<Tr, kM> ldo_b(smem_addr(sQ0 + Tr::kSmemQElems), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  const LdsmAddr<Tr, kM> lq_t(smem_addr(sQ0), (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
  const LdsmAddr<Tr, kM> ldo_t(smem_addr(sQ0 + Tr::kSmemQElems), (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
  auto staged = [](LdsmAddr<Tr, kM> a, uint32_t bytes) {
    a = a.fresh();
    a.base += bytes;
    return a;
  };
  const LdsmAddr<Tr, kN> lk_t(smem_addr(sK), (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
  const LdsmAddr<Ds, kN> lds_t(smem_addr(sdS), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);

  float acc_dk[kDkvT][4], acc_dv[kDkvT][4];
#pragma unroll
  for (int dt = 0; dt < kDkvT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[dt][e] = acc_dv[dt][e] = 0.f;

  const int group = f.group;

  // The (query head, query block) pairs of this CTA, in order: k -> h = hk * group + k / nm, m = m_begin + k % nm.
  const int nm = m_end - m_begin;
  const int pairs = group * nm;
  const int stages = p.stages;
  // Pair k's Q and dO into stage `stage`, its lse and Dsum into registers (prefetch_pair).
  float lse_next = INFINITY, dsum_next = 0.f;
  auto prefetch = [&](int k, int stage) {
    prefetch_pair<Tr>(sQ0 + stage * kStageElems, p, sq, b, hk * group + k / nm, (m_begin + k % nm) * kM, tid, lse_next,
                      dsum_next);
  };
  if (pairs > 0) prefetch(0, 0);

#pragma unroll 1
  for (int k = 0; k < pairs; ++k) {
    const int h = hk * group + k / nm, i0 = (m_begin + k % nm) * kM;
    const int stage = stages == 2 ? (k & 1) : 0;
    const int slot = k & 1;
    // lse/Dsum slot k & 1 was last read by pair k - 2, finished before the previous iteration's first barrier.
    if (tid < kM) {
      sLse[slot * kM + tid] = lse_next;
      sDsum[slot * kM + tid] = dsum_next;
    }
    cp_async_wait<0>();
    __syncthreads();  // pair k's Q, dO, lse, Dsum are visible; every warp is done with pair k - 1's stage
    if (stages == 2 && k + 1 < pairs) prefetch(k + 1, (k + 1) & 1);  // overlaps this pair's math

    const BwdRowCtx rc = bwd_row_ctx(f, off, sq.seq_k, b, h);
    const float* lse_s = sLse + slot * kM;
    const float* dsum_s = sDsum + slot * kM;
    const uint32_t stage_bytes = stage * kStageBytes;

    // Dropout bits of this thread's elements (element k = nt * 4 + e: key row g + 8 (e / 2), query column
    // nt * 8 + 2t + e % 2), before the accumulators are live.
    const uint32_t keep = dropout_mask<kQT * 4>(f, rc, [&](int x, int& i, int& j) {
      i = i0 + (x >> 2) * 8 + 2 * t + (x & 1);
      j = j0 + warp * 16 + g + 8 * ((x >> 1) & 1);
    });

    // ---- S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys
    float st[kQT][4], dpt[kQT][4];
    {
      const LdsmAddr<Tr, kN> lka = lk_a.fresh(), lva = lv_a.fresh();
      const LdsmAddr<Tr, kM> lqb = staged(lq_b, stage_bytes), ldob = staged(ldo_b, stage_bytes);
      gemm_pair_nt<E, kKS>(st, dpt, lka, lva, lqb, ldob, warp * 16);
    }

    // ---- P (with dropout) into st, dS into dpt; element (r, c): key row g + 8r, query column 2t + c
    if (p.plain_tiles && plain_tile(f, rc, i0, kM, j0, kN)) {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt) {
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
        const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e)
          grad_element_plain(st[nt][e], dpt[nt][e], (e & 1) ? l2.y : l2.x, (e & 1) ? d2.y : d2.x, f.score_mul);
      }
    } else {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt) {
        // this thread's two query columns 2t, 2t + 1 of the tile: one 8-byte load each of lse and Dsum
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
        const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int jl = warp * 16 + g + 8 * (e >> 1);
          const int il = nt * 8 + 2 * t + (e & 1);
          grad_element(st[nt][e], dpt[nt][e], i0 + il, j0 + jl, (e & 1) ? l2.y : l2.x, (e & 1) ? d2.y : d2.x,
                       (keep >> (nt * 4 + e)) & 1u, f, rc);
        }
      }
    }

    // ---- dV += (P Z)^T dO, then dK += dS^T Q, over this CTA's columns (two loops: P^T is dead
    // before dS^T's fragments are built, which keeps D = 256 within 255 registers)
    {
      const LdsmAddr<Tr, kM> ldot = staged(ldo_t, stage_bytes);
#pragma unroll
      for (int ms = 0; ms < kMS; ++ms) {
        uint32_t a[4];
        a[0] = pack2<E>(st[2 * ms][0], st[2 * ms][1]);
        a[1] = pack2<E>(st[2 * ms][2], st[2 * ms][3]);
        a[2] = pack2<E>(st[2 * ms + 1][0], st[2 * ms + 1][1]);
        a[3] = pack2<E>(st[2 * ms + 1][2], st[2 * ms + 1][3]);
#pragma unroll
        for (int dp = 0; dp < kDkvT / 2; ++dp) {
          uint32_t bo[4];
          ldmatrix_x4_trans(bo, ldot.at(ms * 16, col0 / 8 + dp * 2));
          mma_16816<E>(acc_dv[2 * dp], a, bo[0], bo[1]);
          mma_16816<E>(acc_dv[2 * dp + 1], a, bo[2], bo[3]);
        }
      }
    }
    {
      const LdsmAddr<Tr, kM> lqt = staged(lq_t, stage_bytes);
#pragma unroll
      for (int ms = 0; ms < kMS; ++ms) {
        uint32_t a[4];
        a[0] = pack2<E>(dpt[2 * ms][0], dpt[2 * ms][1]);
        a[1] = pack2<E>(dpt[2 * ms][2], dpt[2 * ms][3]);
        a[2] = pack2<E>(dpt[2 * ms + 1][0], dpt[2 * ms + 1][1]);
        a[3] = pack2<E>(dpt[2 * ms + 1][2], dpt[2 * ms + 1][3]);
#pragma unroll
        for (int dp = 0; dp < kDkvT / 2; ++dp) {
          uint32_t bq[4];
          ldmatrix_x4_trans(bq, lqt.at(ms * 16, col0 / 8 + dp * 2));
          mma_16816<E>(acc_dk[2 * dp], a, bq[0], bq[1]);
          mma_16816<E>(acc_dk[2 * dp + 1], a, bq[2], bq[3]);
        }
      }
    }

    if (p.deterministic) {  // dQ comes from its own kernel
      if (stages == 1 && k + 1 < pairs) {
        __syncthreads();  // every warp is done reading this stage
        prefetch(k + 1, 0);
      }
      continue;
    }

    // ---- dS^T to shared memory (rows = keys), then dQ_m += dS K with fp32 atomics
#pragma unroll
    for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = warp * 16 + g + 8 * r;
        *reinterpret_cast<uint32_t*>(sdS + swizzle_offset<Ds>(row, nt, kN) + 2 * t) =
            pack2<E>(dpt[nt][2 * r], dpt[nt][2 * r + 1]);
      }
    __syncthreads();                                       // dS^T complete; Q and dO of this stage are no longer read
    if (stages == 1 && k + 1 < pairs) prefetch(k + 1, 0);  // overlaps the dQ part
    {
      constexpr int kDqT = Tr::kDqPassTiles;
      const int rw = warp % Tr::kDqRowWarps, cg = warp / Tr::kDqRowWarps;
      const LdsmAddr<Ds, kN> ldst = lds_t.fresh();
      const LdsmAddr<Tr, kN> lkt = lk_t.fresh();
#pragma unroll
      for (int pass = 0; pass < Tr::kDqTiles / kDqT; ++pass) {
        const int dcol0 = col0 + cg * Tr::kDqCols + pass * kDqT * 8;
        float acc_dq[kDqT][4];
#pragma unroll
        for (int dt = 0; dt < kDqT; ++dt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc_dq[dt][e] = 0.f;
#pragma unroll
        for (int ks = 0; ks < kN / 16; ++ks) {
          uint32_t a[4];
          ldmatrix_x4_trans(a, ldst.at(ks * 16, rw * 2));
#pragma unroll
          for (int dp = 0; dp < kDqT / 2; ++dp) {
            uint32_t bk[4];
            ldmatrix_x4_trans(bk, lkt.at(ks * 16, dcol0 / 8 + dp * 2));
            mma_16816<E>(acc_dq[2 * dp], a, bk[0], bk[1]);
            mma_16816<E>(acc_dq[2 * dp + 1], a, bk[2], bk[3]);
          }
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = i0 + rw * 16 + g + 8 * r;
          if (i >= sq.seq_q) continue;
          float* dst = p.dq_accum + sq.lse_index(f, b, h, i) * p.dq_accum_stride + dcol0 + 2 * t;
#pragma unroll
          for (int dt = 0; dt < kDqT; ++dt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            // sm90: one 8-byte vector reduction per pair, no return value (dst is 8-byte aligned: even
            // column, even row stride); halves the atomic instructions into L2.
            red_add_f32x2(dst + dt * 8, acc_dq[dt][2 * r], acc_dq[dt][2 * r + 1]);
#else
            atomicAdd(dst + dt * 8, acc_dq[dt][2 * r]);
            atomicAdd(dst + dt * 8 + 1, acc_dq[dt][2 * r + 1]);
#endif
          }
        }
      }
    }
  }

  // ---- epilogue: dK = scale * sum dS^T Q, dV = sum (P Z)^T dO, in the output dtype
  cp_async_wait<0>();  // a CTA with no query block still has its K/V copies in flight
  E* dk_base = static_cast<E*>(p.dk);
  E* dv_base = static_cast<E*>(p.dv);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = j0 + warp * 16 + g + 8 * r;
    if (j >= sq.seq_k) continue;
    E* dk_row = dk_base + sq.k_row(b, hk, j, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride);
    E* dv_row = dv_base + sq.k_row(b, hk, j, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride);
#pragma unroll
    for (int dt = 0; dt < kDkvT; ++dt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int col = col0 + dt * 8 + 2 * t + c;
        if (col >= f.head_dim) continue;
        dk_row[col] = from_float<E>(acc_dk[dt][2 * r + c] * p.scale);
        dv_row[col] = from_float<E>(acc_dv[dt][2 * r + c]);
      }
  }
}

}  // namespace attn::flash
