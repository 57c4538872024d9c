// Tile shapes of the TMA warp-specialized Hopper dK/dV kernel (flash_bwd_sm90_tma_ws_kernel.h), apart from
// its body: FlashAttention-3's backward layout at D 128. One per generated instantiation
// (scripts/generate-bwd-instantiations.mjs, BWD_SM90_TMA_WS_CONFIGS).
//
// Forced-only for now (the kernel option 'sm90-bwd-tma-ws'; bwd_dispatch.cu choose says why).
//
// A CTA owns kBlockN = 128 keys. Two consumer warpgroups hold 64 keys each and run every GEMM on
// wgmma.m64nNk16 exactly as the cp.async Hopper kernel does (bwd_sm90_traits.h: S^T and dP^T with the keys as
// M, dV and dK with P^T / dS^T from registers, dQ = dS.K with each warpgroup's half of the columns); a third,
// the producer warpgroup, loads the tiles with the TMA and adds each query block's dQ into the fp32
// workspace with a TMA reduction.
#pragma once
#include <cstdint>

#include "bwd/bwd_traits.h"

namespace attn::flash {

template <int kHeadDim_, int kBlockM_, typename Element_>
struct BwdSm90TmaWsTraits : SmemRows<kHeadDim_> {
  static constexpr BwdForm kForm = BwdForm::kSm90TmaWs;  // flash_bwd_launch.h picks the body and launch by this
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = 128;
  static constexpr bool kRoles = false;
  static constexpr int kNWarpGroups = 2;                  // consumers
  static constexpr int kNWarps = 4 * kNWarpGroups;        // consumer warps: warp w owns keys 16w..16w+15
  static constexpr int kNThreads = kNWarps * 32;          // consumer threads (TileIO's and the helpers' thread count)
  static constexpr int kLaunchThreads = kNThreads + 128;  // + the producer warpgroup
  // setmaxnreg: per SM sub-partition one producer and two consumer warps, 40 + 2 x 232 <= 512 registers a lane.
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr int kColSplits = 1;
  static constexpr int kStages = 2;  // the Q / dO ring

  static constexpr int kQTiles = kBlockM / 8;              // n8 query groups of S^T per warp
  static constexpr int kKSteps = kHeadDim / 16;            // k16 steps of K.Q^T and V.dO^T
  static constexpr int kMSteps = kBlockM / 16;             // k16 steps of P^T.dO and dS^T.Q
  static constexpr int kDTiles = kHeadDim / 8;             // n8 column groups of dK / dV per warp
  static constexpr int kDqCols = kHeadDim / kNWarpGroups;  // dQ columns of one warpgroup
  static constexpr int kDqTiles = kDqCols / 8;
  static constexpr int kDqKSteps = kBlockN / 16;  // k16 steps of dS.K

  using DsRows = SmemRows<kBlockM>;  // the dS^T tile: kBlockN rows (keys) of kBlockM elements (queries)
  static constexpr int kSmemQElems = kBlockM * kHeadDim;   // Q and dO, one stage
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;  // K and V
  static constexpr int kSmemDsElems = kBlockN * kBlockM;   // one dS^T buffer (two: one per pair parity)
  static constexpr int kDqBoxCols = 32;                    // fp32 columns of one 128-byte swizzle row
  static constexpr int kSmemDqFloats = kBlockM * kHeadDim;
  // K, V, kStages x (Q, dO), 2 x dS^T, the fp32 dQ tile (every tile on a 1024-byte boundary: the swizzle
  // atom), kStages slots of lse and Dsum, 5 mbarriers; + 1 KB to align the dynamic buffer's start.
  static constexpr int kSmemTileBytes =
      (2 * kSmemKVElems + 2 * kStages * kSmemQElems + 2 * kSmemDsElems) * 2 + kSmemDqFloats * 4;
  static constexpr int kSmemBytes = kSmemTileBytes + 2 * kStages * kBlockM * 4 + 64 + 1024;
  static constexpr int smem_bytes(int) { return kSmemBytes; }

  static_assert(kHeadDim == 128, "the TMA warp-specialized backward is written for the D128 bucket");
  static_assert(kBlockM == 64, "one wgmma M of queries per pair (the dQ GEMM)");
  static_assert(kSmemBytes <= 227 * 1024, "fits an sm90 CTA's shared memory");
};

}  // namespace attn::flash
