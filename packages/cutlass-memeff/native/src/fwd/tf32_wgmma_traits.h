// Tile shapes of the sm90 fp32 forward on wgmma (fwd/fwd_tf32_wgmma.cuh). Head dims are the buckets of
// tf32_traits.h; D and Dv multiples of 4.
#pragma once

namespace memeff {

// Two warpgroups of 64 query rows each; 32 keys per step. Shared memory, 32-bit words, every part tile in
// 128-byte rows of 32 words (column blocks of the head dim for Q and K, the step's 32 keys for V^T) with
// each 16-byte chunk XOR-ed by row % 8: wgmma's 128-byte swizzle.
//   [Q hi][Q lo]              kBlockM x kHeadDim each, split once per block
//   [K hi][K lo]              kBlockN x kHeadDim each
//   [V^T hi][V^T lo][V^T rest] kHeadDim x kBlockN each (V transposed: tf32 wgmma reads B K-major only)
//   [landing tile]            kBlockN x kPitchLand floats: each K and V tile lands there (cp.async) and the
//                             block splits it into its parts; Q lands over K..landing before the first K.
template <int kHeadDim_>
struct Tf32WgmmaFwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kThreads = 256;
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 32;
  static constexpr int kNTiles = kBlockN / 8;   // n8 tiles of S
  static constexpr int kOTiles = kHeadDim / 8;  // n8 tiles of O
  static constexpr int kKSteps = kHeadDim / 8;  // k8 steps of Q.K^T
  static constexpr int kPSteps = kBlockN / 8;   // k8 steps of P.V
  // Q.K^T's k8 steps go into fresh partial accumulators 4 at a time, P.V's whole step into one, each then
  // added with an IEEE add: the tensor cores truncate their sums (tf32x3.cuh), and one accumulator over all
  // of D fails the fp32 accuracy rule (tools/research/tf32x3-emulate.py).
  static constexpr int kQkChunk = 4;
  static constexpr int kQkChunks = kKSteps / kQkChunk;
  // Unpadded: the split passes read 8 consecutive 16-byte chunks of a row per phase, or 32 consecutive
  // words of a row per warp, conflict free at any pitch; the d64 form needs the 2 KB for two blocks per SM.
  static constexpr int kPitchLand = kHeadDim;
  static constexpr int kQPart = kBlockM * kHeadDim;
  static constexpr int kKPart = kBlockN * kHeadDim;
  static constexpr int kVPart = kHeadDim * kBlockN;
  static constexpr int kLand = kBlockN * kPitchLand;
  // + 1024: the tiles start on a 1024-byte boundary (the swizzle is on absolute address bits).
  static constexpr int kSmemBytes = (2 * kQPart + 2 * kKPart + 3 * kVPart + kLand) * 4 + 1024;
  static_assert(kHeadDim % 32 == 0 && kBlockN == 32, "whole 128-byte column blocks; V^T rows are one block of keys");
  static_assert(kBlockM * kPitchLand <= 2 * kKPart + 3 * kVPart + kLand, "Q lands over K, V and the landing tile");
  static_assert(kSmemBytes <= 227 * 1024, "fits sm90's shared memory");
  // d64: two blocks per SM (113 KB each, + 1 KB the hardware keeps per block: exactly sm90's 228 KB), so one
  // block's wgmma runs under the other's split passes and softmax; the 128 registers that leaves suffice.
  static constexpr int kMinBlocksPerSm = kHeadDim == 64 ? 2 : 1;
  static_assert(kMinBlocksPerSm * (kSmemBytes + 1024) <= 228 * 1024, "blocks per SM fit sm90's shared memory");
};

}  // namespace memeff
