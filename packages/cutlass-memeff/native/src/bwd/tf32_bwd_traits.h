// Tile shapes of the fp32 tensor-core backward (3xTF32, sm80+; bwd/bwd_tf32.cuh). Head dims are
// buckets as on the 16-bit path; D and Dv multiples of 4 (16-byte cp.async chunks of 4 floats).
#pragma once

namespace memeff {

// kDSplit_ = 2 (the d128 form, Tf32BwdBucketTraits): two warps per 16 keys, each with half of the head
// dim: half of S^T's and dP^T's k8 steps (the two partials summed through shared memory), half of dK's and
// dV's columns. 8 warps per block instead of 4 (one block per SM fits at d128 either way), half the
// accumulators per thread.
template <int kHeadDim_, int kDSplit_ = 1>
struct Tf32BwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kDSplit = kDSplit_;
  static constexpr int kKeyWarps = 4;
  static constexpr int kNWarps = kKeyWarps * kDSplit;
  static constexpr int kThreads = kNWarps * 32;
  static constexpr int kBlockN = 16 * kKeyWarps;  // keys: each key warp owns 16 (rows of S^T, dK, dV)
  static constexpr int kColSplit = 1;             // one block owns every column of its keys
  static constexpr bool kStageMask = true;
  // Queries per step: 16, not the 16-bit kernel's 32. K and V stay in shared memory as TF32 parts (hi
  // and lo pairs, 2 x 66 KB at d128), Q and dO as parts and as their landing tiles; 32 queries would not fit.
  static constexpr int kBlockM = 16;
  static constexpr int kQTiles = kBlockM / 8;             // n8 tiles of S^T per warp
  static constexpr int kKsPart = kHeadDim / 8 / kDSplit;  // k8 steps of S^T / dP^T per warp
  static constexpr int kDTiles = kHeadDim / 8 / kDSplit;  // n8 tiles of dK / dV per warp
  // dQ = dS K: each warp takes 1 / kNWarps of the head-dim columns for all 16 queries.
  static constexpr int kDqTiles = kHeadDim / 8 / kNWarps;
  // Row pitches, chosen so that every fragment read is conflict-free:
  // - K and V: each element's {hi, lo} side by side, one 8-byte load per operand element (tf32_pair_index:
  //   pitch 4 mod 16 pairs and column bit 2 flipped on rows with bit 2 set); A fragments of S^T = K Q^T and
  //   dP^T = V dO^T read (row g, column t), B fragments of dQ = dS K (row t, column g): each half-warp phase
  //   hits 16 distinct 8-byte bank pairs either way.
  // - Q and dO parts (pitch 4 mod 32): B fragments of S^T / dP^T read (row g, column t); B fragments of
  //   dK += dS^T Q and dV += P^T dO read (row 2t, column g) (the k order of the accumulator-as-A operand).
  // - dS (pitch 4 mod 32): A fragments of dQ read (row g, column t); the stores from the S^T layout write
  //   (row 2t, column g).
  static constexpr int kPitchKV2 = kHeadDim + 4;  // {hi, lo} pairs
  static constexpr int kPitchQ = kHeadDim + 4;
  static constexpr int kPitchDs = kBlockN + 4;
  static constexpr int kSmemKV = kBlockN * kPitchKV2 * 2;  // floats per operand (K or V)
  static constexpr int kSmemQ = kBlockM * kPitchQ;
  static constexpr int kSmemDs = kBlockM * kPitchDs;
  // kDSplit: each warp's S^T and dP^T partials, [warp][2 * kQTiles * 4][32 lanes].
  static constexpr int kSmemXch = kDSplit > 1 ? kNWarps * 2 * kQTiles * 4 * 32 : 0;
  // K and V pairs (K and V land raw in V's pairs first); Q and dO high parts double-buffered (they land
  // there); Q and dO low parts; dS hi, dS lo [queries][keys]; the partials; lse and D [2][kBlockM].
  static constexpr int kSmemBytes = (2 * kSmemKV + 6 * kSmemQ + 2 * kSmemDs + kSmemXch + 4 * kBlockM) * 4;
  // Plus, when the call has a mask, kMaskBufs [kBlockM][kBlockN] mask tiles (MaskTile, common/mask_tile.cuh).
  // d64: one: with two the block takes 117.5 KB and one block runs per SM instead of two; the next
  // step's tile is then issued after the step's P and dS, under its dQ.
  static constexpr int kMaskBufs = kHeadDim <= 64 && kDSplit == 1 ? 1 : 2;
  static constexpr int kSmemMaskBytes = kMaskBufs * kBlockM * (kBlockN * 4 + 16);
  // Plus, with BwdParams::dbias_presum, each thread's dS fragment summed over the group's heads so far.
  static constexpr int kSmemPresumBytes = kQTiles * 4 * kThreads * 4;
  // d64: 108.8 KB without a mask, two blocks (8 warps) per SM; d128: 199 KB (215 KB split), one.
  static constexpr int kMinBlocksPerSm = kHeadDim <= 64 && kDSplit == 1 ? 2 : 1;
  static_assert(kPitchKV2 % 16 == 4 && kPitchQ % 32 == 4 && kPitchDs % 32 == 4, "bank spread");
  static_assert(kSmemKV >= 2 * kBlockN * kHeadDim, "raw K and V land in V's pairs");
  static_assert(kDqTiles >= 1 && kDTiles * kDSplit * 8 == kHeadDim, "whole tiles per warp");
  static_assert(kSmemBytes + kSmemMaskBytes + kSmemPresumBytes <= 232448,
                "fits sm90's shared memory with a mask and presum");
};

constexpr int kTf32BwdBuckets[] = {64, 128};
constexpr int kTf32BwdMaxHeadDim = 128;

// The traits of the 3xTF32 backward per bucket: d128 in the split form, d64 in the 4-warp form (the split
// form measured 0.74-0.76x torch there against 0.94-0.99x).
template <int kBucket>
using Tf32BwdBucketTraits = Tf32BwdTraits<kBucket, kBucket == 128 ? 2 : 1>;

}  // namespace memeff
