// Tile shapes of the Hopper fp8 forward kernel (flash_fwd_sm90_fp8_kernel.h), apart from its body.
//
// Inputs are float8_e4m3 (one byte per element), the output bf16. The schedule is the 16-bit kernel's
// (FwdSm90Traits): 128 query rows in two consumer warpgroups of 64, a producer warpgroup, a ring of K and V
// stages. What fp8 changes:
//   - wgmma takes 8-bit operands K-major only, so O += P.V needs V^T (head dim x keys, keys contiguous) in
//     shared memory: the producer loads V row-major into one of two staging tiles and transposes it into the
//     ring (fwd_sm90_fp8_ops.h);
//   - every tile row is 128 bytes (head-dim bucket 128 for Q and K, a 128-key tile for V^T): one 128-byte
//     swizzle atom, which the 16-bit tile code (TileIO, swizzle_offset) lays out when it is told the rows
//     are 64 two-byte elements (Bytes64Layout below);
//   - O is written as bf16 through the staging tiles, which are free once the last V^T is in the ring.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "sm90/fwd_sm90_traits.h"

namespace attn::flash {

template <int kStages_, int kStagedTiles_>
struct FwdSm90Fp8Traits {
  using Element = __nv_fp8_e4m3;  // q, k, v (the pointer type of the CTA's work: byte strides)
  // O's tile: the 16-bit kernel's bf16 output at head dim 128 (its layout and store code; store_output).
  using OutTile = FwdSm90Traits<128, 128, 128, 1, __nv_bfloat16, true>;
  static constexpr int kHeadDim = 128;  // the bucket: head dims 16..128 in steps of 16, zero-padded to 128
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 128;
  static constexpr int kStages = kStages_;
  // Staging tiles for V (row-major, before its transpose): V_n is loaded kStagedTiles - 1 tiles ahead.
  static constexpr int kStagedTiles = kStagedTiles_;
  static_assert(kStagedTiles >= 2, "O's bf16 tile takes the first two");
  static constexpr int kNWarpGroups = 2;
  static constexpr int kNWarps = 8;  // the consumers
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kLaunchThreads = kNThreads + 128;
  // The producer transposes V, so it keeps more registers than the 16-bit kernel's (40): 56 + 2 x 224 <= 512
  // per lane of an SM sub-partition.
  static constexpr int kProducerRegs = 56, kConsumerRegs = 224;
  static constexpr int kMinBlocks = 1;
  static constexpr int kNTiles = kBlockN / 8;    // n8 column groups of S per warp
  static constexpr int kDTiles = kHeadDim / 8;   // n8 column groups of O per warp
  static constexpr int kKSteps = kHeadDim / 32;  // k32 steps of Q.K^T
  static constexpr int kPSteps = kBlockN / 32;   // k32 steps of P.V

  static constexpr int kRowBytes = 128;
  static constexpr int kTileBytes = kBlockM * kRowBytes;  // Q, K, V^T and a staging tile alike: 16 KB
  static_assert(kBlockM == kBlockN && kHeadDim == kRowBytes && kBlockN == kRowBytes, "one tile shape for all");
  // Q, the ring (K and V^T per stage), the staging tiles (V row-major; O's 128 x 128 bf16 at the end), +1 KB
  // to place the tiles on wgmma's 1024-byte swizzle atom, + the ring's four mbarriers per stage.
  static constexpr int kSmemBytes = (1 + 2 * kStages + kStagedTiles) * kTileBytes + 1024 + 4 * 8 * kStages;
  static_assert(kSmemBytes <= 227 * 1024, "the tiles must fit an sm90 CTA's shared memory");
  static_assert(kBlockM * kHeadDim * 2 == 2 * kTileBytes, "O (bf16) fits the two staging tiles");
};

// A 128-byte tile row seen as 64 two-byte elements: the 16-bit kernels' tile layout and copy code (TileIO,
// swizzle_offset: 64-element column blocks, 16-byte chunks XOR-ed with row % 8) then place fp8 rows exactly
// where wgmma's 128-byte swizzle reads them. Strides and head dims passed to that code are in these units
// (bytes / 2).
template <int kThreads>
struct Bytes64Layout {
  using Element = __nv_bfloat16;  // a stand-in for two fp8 bytes: only moved, never converted
  static constexpr int kHeadDim = 64;
  static constexpr int kBlockKSmem = 64;
  static constexpr int kChunksPerBlock = 8;
  static constexpr int kChunksPerRow = 8;
  static constexpr int kNThreads = kThreads;
};

}  // namespace attn::flash
