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

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kMinBlocks_, typename Element_, bool kWarpSpecialized_ = false>
struct FwdSm90Traits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kMinBlocks = kMinBlocks_;  // __launch_bounds__' CTAs per SM: caps the registers
  // true: flash_fwd_sm90_ws_kernel.h (a producer warpgroup loads K/V into a 3-stage ring; the two consumer
  // warpgroups take turns on the tensor cores, one's softmax under the other's GEMMs); false:
  // flash_fwd_sm90_kernel.h (every thread loads, two stages, one __syncthreads per key tile).
  static constexpr bool kWarpSpecialized = kWarpSpecialized_;
  static constexpr int kNWarpGroups = kBlockM / 64;
  static constexpr int kNWarps = 4 * kNWarpGroups;  // the warps that hold query rows (consumers)
  static constexpr int kNThreads = kNWarps * 32;
  // + the producer warpgroup: setmaxnreg moves registers between whole warpgroups, so the producer is one
  // (its 4 warps share the loads) and gives up all but kProducerRegs to the consumers' kConsumerRegs
  // (per SM sub-partition: one producer and two consumer warps, 40 + 2 x 232 <= 512 registers per lane).
  static constexpr int kLaunchThreads = kNThreads + (kWarpSpecialized ? 128 : 0);
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
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
  static constexpr int kStages = kWarpSpecialized ? 3 : 2;
  // + 1 KB: the tiles are placed on a 1024-byte boundary (wgmma's swizzle atom) inside the dynamic buffer;
  // + 64 bytes: the ring's 'full' and 'empty' mbarriers (warp-specialized kernel).
  static constexpr int kSmemBytes = (kSmemQElems + 2 * kStages * kSmemKVElems) * 2 + 1024 + 64;

  // wgmma N is the key-tile width (S) and the head dim (O): widths scripts/generate-wgmma.mjs writes.
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "sm90 head dims: 64, 128, 256");
  static_assert(kBlockN == 64 || kBlockN == 128 || kBlockN == 256, "sm90 key tiles: 64, 128, 256");
  static_assert(kBlockM % 64 == 0 && kBlockM <= 192, "one to three warpgroups of 64 rows");
  static_assert(!kWarpSpecialized || kBlockM == 128, "the ping-pong schedule is written for two warpgroups");
};

}  // namespace attn::flash
