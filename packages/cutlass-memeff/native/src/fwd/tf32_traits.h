// Tile shapes of the fp32 tensor-core forward (3xTF32, sm80+; fwd/fwd_tf32.cuh). Head dims are
// buckets as on the 16-bit path; D and Dv multiples of 4 (16-byte cp.async chunks of 4 floats).
#pragma once

namespace memeff {

// kNWarps_ = 8 (v8, "wide", FwdParams::tf32_wide): 128 queries per block, and each step's K and V tiles
// are split into TF32 parts once by the whole block (kSplitKV: hi in place, lo / rest in arrays beside
// them) instead of by every warp; one block of 8 warps per SM at d128, as v7's two blocks of 4.
template <int kHeadDim_, int kNWarps_ = 4>
struct Tf32FwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr bool kSplitKV = kNWarps_ == 8;
  static constexpr int kThreads = kNWarps * 32;
  static constexpr int kBlockM = 16 * kNWarps;  // each warp owns 16 query rows
  static constexpr int kBlockN = 32;            // keys per step
  static constexpr int kNTiles = kBlockN / 8;   // n8 tiles of S
  static constexpr int kOTiles = kHeadDim / 8;  // n8 tiles of O
  // Row pitches in floats. Q and K fragments read (row g, col t): pitch = 4 mod 32 puts the 32
  // lanes on 32 banks. V fragments read (row t, col g): pitch = 8 mod 32 does.
  static constexpr int kPitchQK = kHeadDim + 4;
  static constexpr int kPitchV = kHeadDim + 8;
  static constexpr int kSmemQ = kBlockM * kPitchQK;  // floats
  static constexpr int kSmemK = kBlockN * kPitchQK;
  static constexpr int kSmemV = kBlockN * kPitchV;
  // kSplitKV: + K's low parts [N][PQ], V's low parts and rests [2][N][PV] (32-bit words).
  static constexpr int kSmemSplitKV = kSplitKV ? kSmemK + 2 * kSmemV : 0;
  static constexpr int kSmemBytes = (kSmemQ + kSmemK + kSmemV + kSmemSplitKV) * 4;
  static constexpr int kSmemMaskBytes = kBlockM * (kBlockN * 4 + 16);  // MaskTile<kBlockM, kBlockN>
  // d64: 3 blocks (12 warps) per SM, as v2/v3 reached with 168 regs; v4's fresh k8 partials
  // (common/tf32x3.cuh) took ptxas to 195 without the bound.
  static constexpr int kMinBlocksPerSm = kSplitKV ? 1 : kHeadDim == 64 ? 3 : 2;
};

constexpr int kTf32Buckets[] = {64, 128};
inline int tf32_bucket(int d) { return d <= 64 ? 64 : 128; }
constexpr int kTf32MaxHeadDim = 128;

}  // namespace memeff
