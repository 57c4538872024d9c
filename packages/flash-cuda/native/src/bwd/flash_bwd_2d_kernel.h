// The dK/dV kernel of the backward with 2-D warp tiling, FlashAttention-2's (AtomLayoutMSdP /
// AtomLayoutNdKV / AtomLayoutMdQ). Same work per CTA as the row-tiled kernel (flash_bwd_kernel.h: kBlockN keys of
// one (batch, KV head), every query head of the group and every query block that sees a key), same
// elementwise math (bwd_scores.h), same dQ atomics and the same order of every sum, but each GEMM has its
// own warp layout (bwd_traits.h, BwdTraits2d), so P^T and dS^T pass through shared memory:
//   prefetch Q, dO of the next pair into the other stage     (always two stages)
//   S^T = K Q_m^T, dP^T = V dO_m^T     warps: keys x queries; per pass of kPassRows queries
//   P, dS elementwise -> sP^T, sdS^T   (bf16/fp16: with 2-D tiles the warp that needs a fragment is not the one that computed it)
//   barrier
//   dV += sP^T dO_m, dK += sdS^T Q_m   warps: keys x columns (D > 128: no column split, no recompute)
//   default mode: dQ_m += dS K         warps: queries x columns; fp32 atomics into the workspace
// One ldmatrix of a B operand feeds kDkvMTiles (S^T: kSdpMTiles, dQ: kDqMTiles) mma, not one as in the row-tiled kernel.
#pragma once
#include <cstdint>
#include <type_traits>

#include "common/bwd_params.h"
#include "bwd/bwd_gemm.h"
#include "bwd/bwd_scores.h"
#include "bwd/bwd_traits.h"
#include "bwd/flash_bwd_kernel.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/tile_io.h"

namespace attn::flash {

template <typename T>
struct BwdTypeTag {
  using type = T;
};

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads) flash_bwd_dkdv_2d_kernel(const __grid_constant__ BwdParams p) {
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  using Ds = typename Tr::DsRows;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN;
  constexpr int kAM = Tr::kSdpMTiles, kAN = Tr::kSdpNTiles;   // S^T warp tile: m16 (keys) x n8 (queries) tiles
  constexpr int kBM = Tr::kDkvMTiles, kBD = Tr::kDkvDTiles;   // dK/dV warp tile: m16 (keys) x n8 (columns)
  constexpr int kQM = Tr::kDqMTiles, kQP = Tr::kDqPassTiles;  // dQ warp tile: m16 (queries) x n8 per pass
  const FwdParams& f = p.f;

  // Shared memory: K, V, P^T, dS^T, lse and Dsum (two slots each), then two stages of (Q, dO).
  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* sK = reinterpret_cast<E*>(smem_raw);
  E* sV = sK + Tr::kSmemKVElems;
  E* sP = sV + Tr::kSmemKVElems;
  E* sdS = sP + Tr::kSmemDsElems;
  float* sLse = reinterpret_cast<float*>(sdS + Tr::kSmemDsElems);  // [2][kM]
  float* sDsum = sLse + 2 * kM;                                    // [2][kM]
  E* sQ0 = reinterpret_cast<E*>(sDsum + 2 * kM);                   // stage s: Q at sQ0 + s * kStageElems, dO after it
  constexpr int kStageElems = 2 * Tr::kSmemQElems;
  constexpr uint32_t kStageBytes = kStageElems * 2;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int n_block = blockIdx.x;
  const int hk = blockIdx.y, b = blockIdx.z;
  const BwdSeq sq(f, b);
  const int j0 = n_block * kN;
  if (j0 >= sq.seq_k) return;
  const int off = f.lower_right ? sq.seq_k - sq.seq_q : 0;

  // Each warp's place in the three layouts (local key / query / column offsets of its tiles).
  const int ka = (warp % Tr::kSdpWarpsN) * Tr::kSdpTileN, qa_w = (warp / Tr::kSdpWarpsN) * Tr::kSdpTileM;
  const int kb = (warp % Tr::kDkvWarpsN) * Tr::kDkvTileN, cb = (warp / Tr::kDkvWarpsN) * Tr::kDkvTileD;
  const int qq = (warp % Tr::kDqWarpsM) * Tr::kDqTileM, cq = (warp / Tr::kDqWarpsM) * Tr::kDqTileD;

  const QueryBlocks qb = query_blocks_for_keys<kM, kN>(f, sq, j0, off);
  const int m_begin = qb.begin, m_end = qb.end;

  // ---- K and V tiles of this CTA's keys, for the whole loop
  load_kv_tiles<IO, kN>(sK, sV, f, sq, b, hk, j0, tid);

  // Per-lane ldmatrix coordinates (as the row-tiled kernel's): A operands with rows = keys (K, V, P^T, dS^T) plain;
  // B = Q, dO rows plain (S^T, dP^T) or .trans (dV, dK); dS^T .trans as dQ's A, K .trans as its B.
  // Built where they are used from one opaque shared base and lane (addr() below): ten of them kept
  // live across the pair loop would cost 20 registers at the point where the accumulators peak.
  const uint32_t smem_base = smem_addr(smem_raw);
  constexpr uint32_t kOffK = 0, kOffV = Tr::kSmemKVElems * 2, kOffP = 2 * Tr::kSmemKVElems * 2;
  constexpr uint32_t kOffDs = kOffP + Tr::kSmemDsElems * 2;
  constexpr uint32_t kOffQ = kOffDs + Tr::kSmemDsElems * 2 + 4 * kM * 4, kOffDo = kOffQ + Tr::kSmemQElems * 2;
  // Lane (row, chunk) patterns: A plain, B plain, B .trans (Q, dO, K), A .trans (dS^T for dQ).
  enum Pat { kAPlain, kBPlain, kBTrans, kATrans };
  auto addr = [&](auto rows_tag, auto tr_tag, uint32_t off, Pat pat) {
    using TrX = typename decltype(tr_tag)::type;
    constexpr int kRows = decltype(rows_tag)::value;
    const int ln = static_cast<int>(opaque(static_cast<uint32_t>(lane)));
    const uint32_t base = opaque(smem_base) + off;
    switch (pat) {
      case kAPlain:
        return LdsmAddr<TrX, kRows>(base, ln & 15, ln >> 4);
      case kBPlain:
        return LdsmAddr<TrX, kRows>(base, (ln & 7) + ((ln >> 4) << 3), (ln >> 3) & 1);
      case kBTrans:
        return LdsmAddr<TrX, kRows>(base, (ln & 7) + (((ln >> 3) & 1) << 3), ln >> 4);
      default:
        return LdsmAddr<TrX, kRows>(base, (ln & 7) + ((ln >> 4) << 3), (ln >> 3) & 1);
    }
  };
  using RowsN = std::integral_constant<int, kN>;
  using RowsM = std::integral_constant<int, kM>;
  using TagTr = BwdTypeTag<Tr>;
  using TagDs = BwdTypeTag<Ds>;

  float acc_dk[kBM][kBD][4], acc_dv[kBM][kBD][4];
#pragma unroll
  for (int mt = 0; mt < kBM; ++mt)
#pragma unroll
    for (int dt = 0; dt < kBD; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_dk[mt][dt][e] = acc_dv[mt][dt][e] = 0.f;

  const int group = f.group;

  // The (query head, query block) pairs of this CTA, in order: k -> h = hk * group + k / nm, m = m_begin + k % nm.
  const int nm = m_end - m_begin;
  const int pairs = group * nm;
  float lse_next = INFINITY, dsum_next = 0.f;
  auto prefetch = [&](int k, int stage) {
    prefetch_pair<Tr>(sQ0 + stage * kStageElems, p, sq, b, hk * group + k / nm, (m_begin + k % nm) * kM, tid, lse_next,
                      dsum_next);
  };
  if (pairs > 0) prefetch(0, 0);

#pragma unroll 1
  for (int k = 0; k < pairs; ++k) {
    const int h = hk * group + k / nm, i0 = (m_begin + k % nm) * kM;
    const int slot = k & 1;  // the stage and the lse/Dsum slot of this pair
    // Slot k & 1 (stage and lse/Dsum) was last read by pair k - 1's and k - 2's math, finished before
    // this iteration's barrier; P^T / dS^T were last read by pair k - 1, also before it.
    if (tid < kM) {
      sLse[slot * kM + tid] = lse_next;
      sDsum[slot * kM + tid] = dsum_next;
    }
    cp_async_wait<0>();
    __syncthreads();  // pair k's Q, dO, lse, Dsum are visible; every warp is done with pair k - 1
    if (k + 1 < pairs) prefetch(k + 1, (k + 1) & 1);  // overlaps this pair's math

    const BwdRowCtx rc = bwd_row_ctx(f, off, sq.seq_k, b, h);
    const float* lse_s = sLse + slot * kM;
    const float* dsum_s = sDsum + slot * kM;
    const uint32_t stage_bytes = slot * kStageBytes;

#pragma unroll 1
    for (int pass = 0; pass < Tr::kSdpPasses; ++pass) {
      const int qa = pass * Tr::kPassRows + qa_w;  // this warp's first query (local) of the pass
      // Dropout bits, element x = (mt * kAN + nt) * 4 + e: key row mt * 16 + g + 8 (e / 2), query column
      // nt * 8 + 2t + e % 2 of the warp tile; before the accumulators are live.
      const uint32_t keep = dropout_mask<kAM * kAN * 4>(f, rc, [&](int x, int& i, int& j) {
        const int tile = x >> 2, mt = tile / kAN, nt = tile % kAN;
        i = i0 + qa + nt * 8 + 2 * t + (x & 1);
        j = j0 + ka + mt * 16 + g + 8 * ((x >> 1) & 1);
      });

      // ---- S^T = K Q^T and dP^T = V dO^T on this warp's kSdpTileN keys x kSdpTileM queries
      float st[kAM][kAN][4], dpt[kAM][kAN][4];
#pragma unroll
      for (int mt = 0; mt < kAM; ++mt)
#pragma unroll
        for (int nt = 0; nt < kAN; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) st[mt][nt][e] = dpt[mt][nt][e] = 0.f;
      // Two k loops, S^T first: only S^T's fragments are live beside dK/dV and S^T, then dP^T's beside
      // all three (the peak: 2 * kBlockN * (D + kPassRows) / threads accumulators).
      gemm_nt<E, Tr::kKSteps>(st, addr(RowsN{}, TagTr{}, kOffK, kAPlain), ka,
                              addr(RowsM{}, TagTr{}, kOffQ + stage_bytes, kBPlain), qa);
      gemm_nt<E, Tr::kKSteps>(dpt, addr(RowsN{}, TagTr{}, kOffV, kAPlain), ka,
                              addr(RowsM{}, TagTr{}, kOffDo + stage_bytes, kBPlain), qa);

      // ---- P (with dropout) into st, dS into dpt; element (r, c): key row g + 8r, query column 2t + c
      // The plain form on interior tiles, in one uniform branch around the whole loop at D <= 128. At
      // D = 256 that second copy of the loop makes ptxas (sm_90a) spill 60 bytes in a kernel that has none;
      // one branch per n8 column group, after the column's lse/Dsum loads (shared by both forms), spills
      // nothing (the lse/Dsum loads hoisted before one whole-loop branch: 8 bytes).
      constexpr bool kPlainPerColumn = Tr::kHeadDim > 128;
      const bool plain = p.plain_tiles && plain_tile(f, rc, i0, kM, j0, kN);
      auto plain_cols = [&](int nt, float2 l2, float2 d2) {
#pragma unroll
        for (int mt = 0; mt < kAM; ++mt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            grad_element_plain(st[mt][nt][e], dpt[mt][nt][e], (e & 1) ? l2.y : l2.x, (e & 1) ? d2.y : d2.x,
                               f.score_mul);
      };
      auto general_cols = [&](int nt, int il, float2 l2, float2 d2) {
#pragma unroll
        for (int mt = 0; mt < kAM; ++mt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int jl = ka + mt * 16 + g + 8 * (e >> 1);
            grad_element(st[mt][nt][e], dpt[mt][nt][e], i0 + il + (e & 1), j0 + jl, (e & 1) ? l2.y : l2.x,
                         (e & 1) ? d2.y : d2.x, (keep >> ((mt * kAN + nt) * 4 + e)) & 1u, f, rc);
          }
      };
      if (!kPlainPerColumn && plain) {
#pragma unroll
        for (int nt = 0; nt < kAN; ++nt) {
          const int il = qa + nt * 8 + 2 * t;
          plain_cols(nt, *reinterpret_cast<const float2*>(lse_s + il), *reinterpret_cast<const float2*>(dsum_s + il));
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < kAN; ++nt) {
          const int il = qa + nt * 8 + 2 * t;
          const float2 l2 = *reinterpret_cast<const float2*>(lse_s + il);
          const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + il);
          if (kPlainPerColumn && plain)
            plain_cols(nt, l2, d2);
          else
            general_cols(nt, il, l2, d2);
        }
      }

      // ---- (P Z)^T and dS^T to shared memory, rows = keys, in the operand dtype
#pragma unroll
      for (int mt = 0; mt < kAM; ++mt)
#pragma unroll
        for (int nt = 0; nt < kAN; ++nt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int o = swizzle_offset<Ds>(ka + mt * 16 + g + 8 * r, (qa >> 3) + nt, kN) + 2 * t;
            *reinterpret_cast<uint32_t*>(sP + o) = pack2<E>(st[mt][nt][2 * r], st[mt][nt][2 * r + 1]);
            *reinterpret_cast<uint32_t*>(sdS + o) = pack2<E>(dpt[mt][nt][2 * r], dpt[mt][nt][2 * r + 1]);
          }
    }
    __syncthreads();  // P^T and dS^T complete

    // ---- dV += (P Z)^T dO, then dK += dS^T Q, on this warp's kDkvTileN keys x kDkvTileD columns
    gemm_nn<E, Tr::kMSteps>(acc_dv, addr(RowsN{}, TagDs{}, kOffP, kAPlain), kb,
                            addr(RowsM{}, TagTr{}, kOffDo + stage_bytes, kBTrans), cb / 8);
    gemm_nn<E, Tr::kMSteps>(acc_dk, addr(RowsN{}, TagDs{}, kOffDs, kAPlain), kb,
                            addr(RowsM{}, TagTr{}, kOffQ + stage_bytes, kBTrans), cb / 8);

    if (p.deterministic) continue;  // dQ comes from its own kernel

    // ---- dQ_m += dS K on this warp's kDqTileM queries x kDqTileD columns, fp32 atomics
    {
      const LdsmAddr<Ds, kN> ldst = addr(RowsN{}, TagDs{}, kOffDs, kATrans);
      const LdsmAddr<Tr, kN> lkt = addr(RowsN{}, TagTr{}, kOffK, kBTrans);
#pragma unroll
      for (int pass = 0; pass < Tr::kDqDTiles / kQP; ++pass) {
        const int dcol0 = cq + pass * kQP * 8;
        float acc_dq[kQM][kQP][4];
#pragma unroll
        for (int mt = 0; mt < kQM; ++mt)
#pragma unroll
          for (int dt = 0; dt < kQP; ++dt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc_dq[mt][dt][e] = 0.f;
#pragma unroll
        for (int ks = 0; ks < kN / 16; ++ks) {
          uint32_t a[kQM][4];
#pragma unroll
          for (int mt = 0; mt < kQM; ++mt) ldmatrix_x4_trans(a[mt], ldst.at(ks * 16, (qq + mt * 16) / 8));
#pragma unroll
          for (int dp = 0; dp < kQP / 2; ++dp) {
            uint32_t bk[4];
            ldmatrix_x4_trans(bk, lkt.at(ks * 16, dcol0 / 8 + dp * 2));
#pragma unroll
            for (int mt = 0; mt < kQM; ++mt) {
              mma_16816<E>(acc_dq[mt][2 * dp], a[mt], bk[0], bk[1]);
              mma_16816<E>(acc_dq[mt][2 * dp + 1], a[mt], bk[2], bk[3]);
            }
          }
        }
#pragma unroll
        for (int mt = 0; mt < kQM; ++mt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int i = i0 + qq + mt * 16 + g + 8 * r;
            if (i >= sq.seq_q) continue;
            float* dst = p.dq_accum + sq.lse_index(f, b, h, i) * p.dq_accum_stride + dcol0 + 2 * t;
#pragma unroll
            for (int dt = 0; dt < kQP; ++dt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
              red_add_f32x2(dst + dt * 8, acc_dq[mt][dt][2 * r], acc_dq[mt][dt][2 * r + 1]);
#else
              atomicAdd(dst + dt * 8, acc_dq[mt][dt][2 * r]);
              atomicAdd(dst + dt * 8 + 1, acc_dq[mt][dt][2 * r + 1]);
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
  for (int mt = 0; mt < kBM; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int j = j0 + kb + mt * 16 + g + 8 * r;
      if (j >= sq.seq_k) continue;
      E* dk_row = dk_base + sq.k_row(b, hk, j, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride);
      E* dv_row = dv_base + sq.k_row(b, hk, j, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride);
#pragma unroll
      for (int dt = 0; dt < kBD; ++dt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int col = cb + dt * 8 + 2 * t + c;
          if (col >= f.head_dim) continue;
          dk_row[col] = from_float<E>(acc_dk[mt][dt][2 * r + c] * p.scale);
          dv_row[col] = from_float<E>(acc_dv[mt][dt][2 * r + c]);
        }
    }
}

}  // namespace attn::flash
