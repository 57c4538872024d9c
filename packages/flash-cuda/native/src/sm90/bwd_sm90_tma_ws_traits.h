// Tile shapes of the TMA warp-specialized Hopper dK/dV kernel (flash_bwd_sm90_tma_ws_kernel.h), apart from
// its body: FlashAttention-3's backward layouts at D 64 (128 queries x 128 keys) and D 128 (64 x 128). One per
// generated instantiation (scripts/generate-bwd-instantiations.mjs, BWD_SM90_TMA_WS_CONFIGS).
//
// A CTA owns kBlockN = 128 keys. Two consumer warpgroups hold 64 keys each and run every GEMM on
// wgmma.m64nNk16 exactly as the cp.async Hopper kernel does (bwd_sm90_traits.h: S^T and dP^T with the keys as
// M, dV and dK with P^T / dS^T from registers); dQ = dS.K is split between them by columns where a pair is one
// wgmma M of queries (D 128: 64 columns each) and by rows where it is two (D 64: 64 query rows each, every
// column). A third, the producer warpgroup, loads the tiles with the TMA and adds each query block's dQ into
// the fp32 workspace with a TMA reduction.
#pragma once
#include <cstdint>

#include "sm90/bwd_sm90_traits.h"

namespace attn::flash {

template <int kHeadDim_, int kBlockM_, typename Element_>
struct BwdSm90TmaWsTraits : BwdSm90Tiles<kHeadDim_, kBlockM_, 128, Element_> {
  using Base = BwdSm90Tiles<kHeadDim_, kBlockM_, 128, Element_>;
  static constexpr BwdForm kForm = BwdForm::kSm90TmaWs;  // flash_bwd_launch.h picks the body and launch by this
  static constexpr bool kRoles = false;
  static constexpr int kLaunchThreads = Base::kNThreads + 128;  // + the producer warpgroup
  // setmaxnreg: per SM sub-partition one producer and two consumer warps, 40 + 2 x 232 <= 512 registers a lane.
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr int kStages = 2;  // the Q / dO ring

  // dQ = dS.K per warpgroup: M = 64 query rows (one wgmma M), its rows of the pair and its columns of D.
  static constexpr int kDqRowSplits = kBlockM_ / 64;                             // 1: by columns, 2: by rows
  static constexpr int kDqCols = kHeadDim_ * kDqRowSplits / Base::kNWarpGroups;  // dQ columns of one warpgroup
  static constexpr int kDqTiles = kDqCols / 8;

  static constexpr int kDqBoxCols = 32;                    // fp32 columns of one 128-byte swizzle row
  static constexpr int kSmemDqFloats = Base::kSmemQElems;  // the fp32 dQ tile: kBlockM rows of D
  // K, V, kStages x (Q, dO), 2 x dS^T (one per pair parity), the fp32 dQ tile (every tile on a 1024-byte
  // boundary: the swizzle atom), kStages slots of lse and Dsum, 5 mbarriers; + 1 KB to align the dynamic
  // buffer's start.
  static constexpr int kSmemTileBytes =
      (2 * Base::kSmemKVElems + 2 * kStages * Base::kSmemQElems + 2 * Base::kSmemDsElems) * 2 + kSmemDqFloats * 4;
  static constexpr int kSmemBytes = kSmemTileBytes + 2 * kStages * kBlockM_ * 4 + 64 + 1024;
  static constexpr int smem_bytes(int) { return kSmemBytes; }

  static_assert((kHeadDim_ == 128 && kBlockM_ == 64) || (kHeadDim_ == 64 && kBlockM_ == 128),
                "the TMA warp-specialized backward's tiles: D 128 x 64 queries, D 64 x 128 queries");
  static_assert(kDqCols == 64, "a warpgroup's dQ columns are one 64-column block of K (its MN-major B operand)");
  static_assert(kSmemBytes <= 227 * 1024, "fits an sm90 CTA's shared memory");
};

}  // namespace attn::flash
