// Tile shapes of the Hopper forward kernel (flash_fwd_sm90_kernel.h), apart from its body. One
// FwdSm90Traits per generated instantiation (scripts/generate-instantiations.mjs, variant 'sm90').
//
// A CTA owns kBlockM query rows: one warpgroup (4 warps, 128 threads) per 64 rows, each running
// wgmma.m64nNk16 on its own rows. Shared memory: the Q tile and two stages of K and V tiles (the next key
// tile loads while this one is used), in the 128-byte-swizzled layout both ldmatrix-era code (TileIO) and
// wgmma's descriptors read.
#pragma once
#include <cstdint>

namespace attn::flash {

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kMinBlocks_, typename Element_>
struct FwdSm90Traits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kMinBlocks = kMinBlocks_;  // __launch_bounds__' CTAs per SM: caps the registers
  static constexpr int kNWarpGroups = kBlockM / 64;
  static constexpr int kNWarps = 4 * kNWarpGroups;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr bool kExtras = false;  // the lean feature set: no ALiBi, softcap, dropout, left window

  static constexpr int kNTiles = kBlockN / 8;   // n8 column groups of S per warp
  static constexpr int kDTiles = kHeadDim / 8;  // n8 column groups of O per warp
  static constexpr int kKSteps = kHeadDim / 16;  // k16 steps of Q.K^T
  static constexpr int kPSteps = kBlockN / 16;   // k16 steps of P.V

  // The layout TileIO and swizzle_offset know (kernel_traits.h): 64-element (128-byte) column blocks.
  static constexpr int kBlockKSmem = 64;
  static constexpr int kChunksPerBlock = 8;
  static constexpr int kChunksPerRow = kHeadDim / 8;

  static constexpr int kSmemQElems = kBlockM * kHeadDim;
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;
  static constexpr int kStages = 2;
  // + 1 KB: the tiles are placed on a 1024-byte boundary (wgmma's swizzle atom) inside the dynamic buffer.
  static constexpr int kSmemBytes = (kSmemQElems + 2 * kStages * kSmemKVElems) * 2 + 1024;

  // wgmma N is the key-tile width (S) and the head dim (O): widths scripts/generate-wgmma.mjs writes.
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "sm90 head dims: 64, 128, 256");
  static_assert(kBlockN == 64 || kBlockN == 128 || kBlockN == 256, "sm90 key tiles: 64, 128, 256");
  static_assert(kBlockM % 64 == 0 && kBlockM <= 192, "one to three warpgroups of 64 rows");
};

}  // namespace attn::flash
