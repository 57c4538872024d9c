// Tile shapes of the Hopper dK/dV kernel (flash_bwd_sm90_kernel.h), apart from its body. One BwdSm90Traits
// per generated instantiation (scripts/generate-bwd-instantiations.mjs, BWD_SM90_CONFIGS).
//
// A CTA owns kBlockN = 128 keys: two warpgroups of 64 keys each, every GEMM on wgmma.m64nNk16 with the
// warpgroup's keys (or, for dQ, the query block) as M:
//   S^T = K.Q^T, dP^T = V.dO^T   M = 64 keys, N = kBlockM queries, k = D      A = K / V, B = Q / dO (smem)
//   dV += P^T.dO, dK += dS^T.Q   M = 64 keys, N = D, k = kBlockM queries       A = P^T / dS^T (registers)
//   dQ = dS.K                    M = kBlockM queries, N = D / 2 per warpgroup, k = 128 keys
//                                                                             A = dS^T, B = K (smem, MN-major)
// Per warp the accumulators have mma.m16n8k16's layout (16 keys per warp, n8 query groups), so the
// elementwise part (bwd_scores.h) is the mma.sync kernels', and P^T / dS^T feed the next GEMMs from registers.
#pragma once
#include <cstdint>

#include "bwd/bwd_traits.h"

namespace attn::flash {

// What both Hopper dK/dV kernels (this one and the TMA warp-specialized one, bwd_sm90_tma_ws_traits.h) derive
// from the tile shape alone: kBlockN keys in two warpgroups of compute warps (warp w owns keys 16w..16w+15),
// pairs of kBlockM queries, the GEMMs above.
template <int kHeadDim_, int kBlockM_, int kBlockN_, typename Element_>
struct BwdSm90Tiles : SmemRows<kHeadDim_> {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kNWarpGroups = 2;            // the warpgroups that compute
  static constexpr int kNWarps = 4 * kNWarpGroups;  // their warps
  static constexpr int kNThreads = kNWarps * 32;    // their threads (TileIO's and the helpers' thread count)
  static constexpr int kColSplits = 1;

  static constexpr int kQTiles = kBlockM / 8;     // n8 query groups of S^T per warp
  static constexpr int kKSteps = kHeadDim / 16;   // k16 steps of K.Q^T and V.dO^T
  static constexpr int kMSteps = kBlockM / 16;    // k16 steps of P^T.dO and dS^T.Q
  static constexpr int kDTiles = kHeadDim / 8;    // n8 column groups of dK / dV per warp
  static constexpr int kDqKSteps = kBlockN / 16;  // k16 steps of dS.K

  using DsRows = SmemRows<kBlockM>;  // the dS^T tile: kBlockN rows (keys) of kBlockM elements (queries)
  static constexpr int kSmemQElems = kBlockM * kHeadDim;   // Q and dO, one stage
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;  // K and V
  static constexpr int kSmemDsElems = kBlockN * kBlockM;   // one dS^T buffer
};

// D > 128 (flash_bwd_sm90_roles_kernel.h): 64 keys per CTA, and the warpgroups split the work by role
// instead of by keys (dK and dV, 64 keys x 256 columns each, would not fit one warpgroup's registers next to
// each other): warpgroup 0 computes S^T, P and dV, warpgroup 1 dP^T, dS and dK (S^T reaches it through shared
// memory), and each computes half of dQ's columns.
template <int kHeadDim_, int kBlockM_, typename Element_>
struct BwdSm90Traits : BwdSm90Tiles<kHeadDim_, kBlockM_, (kHeadDim_ > 128 ? 64 : 128), Element_> {
  using Base = BwdSm90Tiles<kHeadDim_, kBlockM_, (kHeadDim_ > 128 ? 64 : 128), Element_>;
  static constexpr BwdForm kForm = BwdForm::kSm90;  // flash_bwd_launch.h picks the body by this and kRoles
  static constexpr bool kRoles = kHeadDim_ > 128;

  // dQ: each warpgroup owns half of the columns, in passes of at most 64 (the accumulators of one pass live
  // next to dK or dV).
  static constexpr int kDqCols = kHeadDim_ / Base::kNWarpGroups > 64 ? 64 : kHeadDim_ / Base::kNWarpGroups;
  static constexpr int kDqPasses = kHeadDim_ / Base::kNWarpGroups / kDqCols;
  static constexpr int kDqTiles = kDqCols / 8;

  static constexpr int kSmemSFloats = kRoles ? Base::kSmemDsElems : 0;  // S^T from warpgroup 0 to 1 (fp32)
  // K, V, two stages of (Q, dO), dS^T (every tile on a 1024-byte boundary: wgmma's swizzle atom), S^T (roles),
  // then two slots of lse and Dsum; + 1 KB to align the dynamic buffer's start.
  static constexpr int kSmemTileBytes = (2 * Base::kSmemKVElems + 4 * Base::kSmemQElems + Base::kSmemDsElems) * 2;
  static constexpr int kSmemBytes = kSmemTileBytes + kSmemSFloats * 4 + 4 * kBlockM_ * 4 + 1024;
  static constexpr int smem_bytes(int) { return kSmemBytes; }

  static_assert(kHeadDim_ == 64 || kHeadDim_ == 128 || kHeadDim_ == 256, "sm90 backward head dims: 64, 128, 256");
  static_assert(kBlockM_ == 64, "one wgmma N of queries per pair (the dQ GEMM's M is one warpgroup's 64)");
  static_assert(Base::kQTiles * 4 <= 32, "one 32-bit dropout mask per pair");
  static_assert((Base::kSmemQElems * 2) % 1024 == 0 && (Base::kSmemKVElems * 2) % 1024 == 0 &&
                    (Base::kSmemDsElems * 2) % 1024 == 0,
                "tiles stay 1024-byte aligned");
  static_assert((kBlockM_ * kHeadDim_ / 8) % Base::kNThreads == 0, "Q tile chunks split evenly");
};

}  // namespace attn::flash
