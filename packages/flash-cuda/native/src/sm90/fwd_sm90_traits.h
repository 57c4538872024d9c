// Tile shapes of the Hopper forward kernel (flash_fwd_sm90_ws_kernel.h), apart from its body. One
// FwdSm90Traits per generated instantiation (scripts/generate-instantiations.mjs, variant 'sm90ws').
//
// A CTA owns kBlockM = 128 query rows: two consumer warpgroups (4 warps, 128 threads each) of 64 rows, each
// running wgmma.m64nNk16 on its own rows, and a producer warpgroup that loads K and V. Shared memory: the Q
// tile and a ring of kStages K and V tiles, in the 128-byte-swizzled layout both ldmatrix-era code (TileIO)
// and wgmma's descriptors read, then the ring's mbarriers.
#pragma once
#include <cstdint>

namespace attn::flash {

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kMinBlocks_, typename Element_, bool kSplitRelease_>
struct FwdSm90Traits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kMinBlocks = kMinBlocks_;  // __launch_bounds__' CTAs per SM: caps the registers
  // true: K and V of a stage are filled and released on mbarriers of their own, so K_n's buffer is refilled
  // once S_n is done and V_n's once P_n.V_n is (FlashAttention-3's separate K and V pipelines); false: one
  // pair of mbarriers per stage, released once both are done. The ring's lookahead decides: at 2 stages
  // (D 256) the joint release left no tile in flight; at 3 (D 64, D 128) it is a few percent either way
  // (docs/perf/flash-cuda.md).
  static constexpr bool kSplitRelease = kSplitRelease_;
  static constexpr int kNWarpGroups = kBlockM / 64;
  static constexpr int kNWarps = 4 * kNWarpGroups;  // the warps that hold query rows (consumers)
  static constexpr int kNThreads = kNWarps * 32;
  // + the producer warpgroup: setmaxnreg moves registers between whole warpgroups, so the producer is one
  // (its 4 warps share the loads) and gives up all but kProducerRegs to the consumers' kConsumerRegs
  // (per SM sub-partition: one producer and two consumer warps, 40 + 2 x 232 <= 512 registers per lane).
  static constexpr int kLaunchThreads = kNThreads + 128;
  // One consumer warpgroup (kBlockM 64): two CTAs per SM, each with its own producer, whose consumers take turns
  // on the tensor cores as the warp schedulers interleave them (no named-barrier turns). Its producer is the TMA
  // thread only (24 registers cannot hold the cp.async path): 24 + 232 registers per lane and CTA, 2 CTAs.
  static constexpr bool kTmaOnly = kNWarpGroups == 1;
  static constexpr int kProducerRegs = kTmaOnly ? 24 : 40, kConsumerRegs = 232;
  static constexpr bool kExtras = false;  // the lean feature set: no ALiBi, softcap, dropout, left window

  static constexpr int kNTiles = kBlockN / 8;    // n8 column groups of S per warp
  static constexpr int kDTiles = kHeadDim / 8;   // n8 column groups of O per warp
  static constexpr int kKSteps = kHeadDim / 16;  // k16 steps of Q.K^T
  static constexpr int kPSteps = kBlockN / 16;   // k16 steps of P.V

  // The layout TileIO and swizzle_offset know (kernel_traits.h): 64-element (128-byte) column blocks.
  static constexpr int kBlockKSmem = 64;
  static constexpr int kChunksPerBlock = 8;
  static constexpr int kChunksPerRow = kHeadDim / 8;

  static constexpr int kSmemQElems = kBlockM * kHeadDim;
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;
  // + 1 KB: the tiles are placed on a 1024-byte boundary (wgmma's swizzle atom) inside the dynamic buffer;
  // + the mbarriers: 'full' and 'empty' per stage for K and for V (kSplitRelease), and Q's (the TMA path).
  static constexpr int bar_bytes(int stages) { return (4 * stages + 1) * 8; }
  static constexpr int bytes_for(int stages) {
    return (kSmemQElems + 2 * stages * kSmemKVElems) * 2 + 1024 + bar_bytes(stages);
  }
  // 3 stages where they fit the CTA's share of the SM, else 2: one CTA may take 227 KB (D <= 128 at 128 x 128:
  // 225 KB; D 256 at 128 x 64 takes 2 stages, 193 KB); kMinBlocks >= 2 CTAs share the SM's 228 KB, 1 KB of it
  // reserved per CTA (D 64's one-warpgroup tile: 105 KB at 3 stages).
  static constexpr int kMaxSmemBytes = kMinBlocks >= 2 ? 228 * 1024 / kMinBlocks - 1024 : 227 * 1024;
  static constexpr int kStages = bytes_for(3) <= kMaxSmemBytes ? 3 : 2;
  static constexpr int kSmemBytes = bytes_for(kStages);
  static_assert(kSmemBytes <= kMaxSmemBytes, "the tiles must fit an sm90 CTA's shared memory");

  // wgmma N is the key-tile width (S) and the head dim (O): widths scripts/generate-wgmma.mjs writes.
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "sm90 head dims: 64, 128, 256");
  static_assert(kBlockN == 64 || kBlockN == 128 || kBlockN == 256, "sm90 key tiles: 64, 128, 256");
  static_assert(kBlockM == 128 || (kBlockM == 64 && kMinBlocks == 2),
                "two consumer warpgroups of 64 rows taking turns, or one per CTA at two CTAs per SM");
};

}  // namespace attn::flash
