// Tile shapes of the fp32 tensor-core forward (3xTF32, sm80+; fwd/fwd_tf32.cuh). Head dims are
// buckets as on the 16-bit path; D and Dv multiples of 4 (16-byte cp.async chunks of 4 floats).
#pragma once

namespace memeff {

// kNWarps_ = 8 ("wide", d128): 128 queries per block, and each step's K and V tiles are split into TF32 parts
// once by the whole block (kSplitKV, in the packed layout below) instead of by every warp; one block of 8 warps
// per SM, against two blocks of 4 for the 4-warp form.
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
  static constexpr int kSmemBytes = (kSmemQ + kSmemK + kSmemV) * 4;    // the 4-warp forms (kSplitKV: packed_smem_bytes)
  static constexpr int kSmemMaskBytes = kBlockM * (kBlockN * 4 + 16);  // MaskTile<kBlockM, kBlockN>
  // kSplitKV's packed layout: the parts one lane reads for one mma operand side by side, read with LDS.128
  // (32-bit words):
  //   K [N][kPitchKp]: row r, k8 step ks, column t: {hi(8ks+t), hi(8ks+t+4), lo(8ks+t), lo(8ks+t+4)} at
  //     r * kPitchKp + 16 ks + 4 t; pitch = 16 mod 32 puts rows g and g + 1 of an 8-lane phase on the
  //     other half of the banks.
  //   V hi/lo [N/2][4 kHeadDim]: key pair kp = 4 kk + t (keys 8kk + t, + 4), column d: {hi0, hi1, lo0, lo1} at
  //     kp * 4 kHeadDim + 4 (d ^ 2t) (the XOR spreads the 4 t of a phase over the banks, no padding);
  //   V rests [N/2][2 kHeadDim]: {rest0(d), rest1(d), rest0(d + 8), rest1(d + 8)} for d = 16 n2 + g at
  //     kp * 2 kHeadDim + 4 (8 n2 + (g ^ 2t)).
  //   Q (kWideQPre) [warps][kHeadDim / 8][hi, lo][32 lanes][4]: a lane's A fragment {a0, a1, a2, a3}, hi then lo.
  // K and V land (cp.async) in one fp32 tile of pitch kPitchQK and the split pass writes the parts; Q lands
  // where K and V will be and is split before the first K tile is issued.
  static constexpr int kPitchKp = 2 * kHeadDim + 16;
  static constexpr int kSmemLand = kBlockN * kPitchQK;
  static constexpr int kSmemKp = kBlockN * kPitchKp;
  static constexpr int kSmemVp = kBlockN * 3 * kHeadDim;
  static constexpr int kSmemQp = 2 * kBlockM * kHeadDim;
  static constexpr int packed_smem_bytes(bool q_pre) {
    return ((q_pre ? kSmemQp : kSmemQ) + kSmemLand + kSmemKp + kSmemVp) * 4;
  }
  // d64: 3 blocks (12 warps) per SM; without the bound the fresh k8 partials (common/tf32x3.cuh) take
  // ptxas from 168 registers to 195.
  static constexpr int kMinBlocksPerSm = kSplitKV ? 1 : kHeadDim == 64 ? 3 : 2;
};

constexpr int kTf32Buckets[] = {64, 128};
inline int tf32_bucket(int d) { return d <= 64 ? 64 : 128; }
constexpr int kTf32MaxHeadDim = 128;

}  // namespace memeff
