// Tile shapes of the TMA warp-specialized Hopper dK/dV kernel (flash_bwd_sm90_tma_ws_kernel.h), apart from
// its body: FlashAttention-3's backward layouts at D 64 (128 queries x 128 keys) and D 128 (64 x 128), and at
// D 256 64 x 64 with the consumers split by role (below). One per generated instantiation
// (scripts/generate-bwd-instantiations.mjs, BWD_SM90_TMA_WS_CONFIGS).
//
// D <= 128: a CTA owns kBlockN = 128 keys. Two consumer warpgroups hold 64 keys each and run every GEMM on
// wgmma.m64nNk16 exactly as the cp.async Hopper kernel does (bwd_sm90_traits.h: S^T and dP^T with the keys as
// M, dV and dK with P^T / dS^T from registers); dQ = dS.K is split between them by columns where a pair is one
// wgmma M of queries (D 128: 64 columns each) and by rows where it is two (D 64: 64 query rows each, every
// column). A third, the producer warpgroup, loads the tiles with the TMA and adds each query block's dQ into
// the fp32 workspace with a TMA reduction. D 256: a CTA owns 64 keys; consumer warpgroup 0 computes S^T, P and
// dV, warpgroup 1 dP^T, dS and dK, each half of dQ's columns, added by fp32 atomics from registers (the
// cp.async kernel's D256 form, bwd_sm90_tma_ws_roles.h); the producer loads the tiles.
#pragma once
#include <cstdint>

#include "sm90/bwd_sm90_traits.h"

namespace attn::flash {

template <int kHeadDim_, int kBlockM_, typename Element_>
struct BwdSm90TmaWsTraits : BwdSm90Tiles<kHeadDim_, kBlockM_, (kHeadDim_ > 128 ? 64 : 128), Element_> {
  using Base = BwdSm90Tiles<kHeadDim_, kBlockM_, (kHeadDim_ > 128 ? 64 : 128), Element_>;
  static constexpr BwdForm kForm = BwdForm::kSm90TmaWs;  // flash_bwd_launch.h picks the body and launch by this
  // D 256: the consumer warpgroups split by role, as the cp.async kernel's D256 form (bwd_sm90_traits.h), over
  // 64 keys (bwd_sm90_tma_ws_roles.h); dQ by fp32 atomics from their registers (no room for a dQ tile).
  static constexpr bool kRoles = kHeadDim_ > 128;
  static constexpr int kLaunchThreads = Base::kNThreads + 128;  // + the producer warpgroup
  // setmaxnreg: per SM sub-partition one producer and two consumer warps, at most 512 registers a lane (D 256:
  // dK or dV, 64 keys x 256 columns, is 128 accumulators a thread).
  static constexpr int kProducerRegs = kRoles ? 24 : 40, kConsumerRegs = kRoles ? 240 : 232;
  static constexpr int kStages = 2;  // the Q / dO ring

  // dQ = dS.K per warpgroup: M = 64 query rows (one wgmma M). D <= 128: its rows of the pair and its columns of
  // D, one pass; D 256: every row, its half of the columns in passes of 64.
  static constexpr int kDqRowSplits = kRoles ? 1 : kBlockM_ / 64;  // 1: by columns, 2: by rows
  static constexpr int kDqCols = kRoles ? 64 : kHeadDim_ * kDqRowSplits / Base::kNWarpGroups;  // per pass
  static constexpr int kDqPasses = kRoles ? kHeadDim_ / Base::kNWarpGroups / 64 : 1;
  static constexpr int kDqTiles = kDqCols / 8;
  // Deterministic mode adds dQ in turns (flash_bwd_sm90_tma_ws_kernel.h) where the TMA reduction adds it; the
  // D256 form leaves dQ to the dQ kernel there.
  static constexpr bool kDqTurns = !kRoles;

  static constexpr int kDqBoxCols = 32;                                 // fp32 columns of one 128-byte swizzle row
  static constexpr int kDsBuffers = kRoles ? 1 : 2;                     // dS^T, by pair parity where two
  static constexpr int kSmemDqFloats = kRoles ? 0 : Base::kSmemQElems;  // the fp32 dQ tile: kBlockM rows of D
  static constexpr int kSmemSFloats = kRoles ? Base::kSmemDsElems : 0;  // S^T, warpgroup 0 to 1 (fp32)
  // K, V, kStages x (Q, dO), the dS^T buffers, the fp32 region (every tile on a 1024-byte boundary: the swizzle
  // atom), kStages slots of lse and Dsum, 5 mbarriers; + 1 KB to align the dynamic buffer's start.
  static constexpr int kSmemTileBytes =
      (2 * Base::kSmemKVElems + 2 * kStages * Base::kSmemQElems + kDsBuffers * Base::kSmemDsElems) * 2 +
      (kSmemDqFloats + kSmemSFloats) * 4;
  static constexpr int kSmemBytes = kSmemTileBytes + 2 * kStages * kBlockM_ * 4 + 64 + 1024;
  static constexpr int smem_bytes(int) { return kSmemBytes; }

  static_assert((kHeadDim_ == 128 && kBlockM_ == 64) || (kHeadDim_ == 64 && kBlockM_ == 128) ||
                    (kHeadDim_ == 256 && kBlockM_ == 64),
                "the TMA warp-specialized backward's tiles: D 128 x 64 queries, D 64 x 128, D 256 x 64");
  static_assert(kDqCols == 64, "a dQ pass's columns are one 64-column block of K (its MN-major B operand)");
  static_assert(kSmemBytes <= 227 * 1024, "fits an sm90 CTA's shared memory");
};

}  // namespace attn::flash
