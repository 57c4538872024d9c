// Tile shapes of the tensor-core path (fp16/bf16, sm80+, head dims multiples of 8). kHeadDim is the
// compile-time head dim, the bound of the head-dim loops: either a bucket (kMmaBuckets: D and Dv up to
// it run, zero-padded in shared memory) or an exact head dim (kMmaExactHeadDims: only D == Dv == it
// runs). Shared-memory rows are kTileDim wide, kHeadDim rounded up to 64 elements: the XOR swizzle
// permutes 16-byte chunks in groups of 8.
#pragma once

namespace memeff {

constexpr int kMmaBuckets[] = {64, 128, 256};
// Head dims between the buckets with a forward of their own (D == Dv, calls without FwdParams::features):
// in the d256 bucket their head-dim loops would stop at run time, whose exits keep ptxas from hoisting
// the ldmatrix loads (0.83-0.94x torch efficient there, 1.17-1.55x with their own).
constexpr int kMmaExactHeadDims[] = {160, 192};
constexpr bool mma_exact_head_dim(int d) {
  for (int e : kMmaExactHeadDims) {
    if (d == e) return true;
  }
  return false;
}

template <int kHeadDim_>
struct MmaFwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kExact = mma_exact_head_dim(kHeadDim);
  static constexpr int kTileDim = (kHeadDim + 63) / 64 * 64;
  static constexpr int kNWarps = 4;
  static constexpr int kThreads = kNWarps * 32;
  // Each warp owns kMTiles 16-row tiles, so every K and V fragment read from shared memory feeds
  // kMTiles mma, halving at kMTiles = 2 the ldmatrix traffic per FLOP at d64/d128 and the K/V reloads from
  // L2 per query (128 queries per block instead of 64). At d128 the keys per step drop to 32 to keep
  // S (kMTiles x kBlockN / 2 floats per thread) and O (kMTiles x kHeadDim / 2) under 255 registers:
  // FlashAttention-2's and flash-cuda's shapes (128 x 64 at d64, 128 x 32 at d128, 64 x 32 at d256).
  // d64 runs 64 x 64 (one row tile per warp): 128 x 64 measured slower on the H200 (66.8 vs 90.5
  // TFLOP/s at S=1k); at most 168 regs so that 3 blocks (12 warps) fit per SM.
  static constexpr int kMTiles = kHeadDim == 128 ? 2 : 1;
  static constexpr int kMinBlocksPerSm = kHeadDim == 64 ? 3 : kHeadDim <= 128 ? 2 : 1;
  static constexpr int kBlockM = 16 * kNWarps * kMTiles;    // query rows per block
  static constexpr int kBlockN = kHeadDim <= 64 ? 64 : 32;  // keys per step
  static constexpr int kChunks = kTileDim / 8;              // 16-byte chunks per smem row
  static constexpr int kNTiles = kBlockN / 8;               // n8 tiles of S per row tile
  static constexpr int kOTiles = kHeadDim / 8;              // n8 tiles of O per row tile
  // Q, K, V tiles in 16-bit elements, one buffer each (K(j+1) loads during P.V, V(j) during Q.K^T).
  static constexpr int kSmemQ = kBlockM * kTileDim;
  static constexpr int kSmemK = kBlockN * kTileDim;
  static constexpr int kSmemBytes = (kSmemQ + 2 * kSmemK) * 2;
  // Plus, when the call has a mask, its [kBlockM][kBlockN] tile (MaskTile in common/mask_tile.cuh:
  // pitch kBlockN * 4 + 16 bytes, the widest element plus padding).
  static constexpr int kSmemMaskBytes = kBlockM * (kBlockN * 4 + 16);
  static_assert(kChunks % 8 == 0, "the XOR swizzle permutes chunks in groups of 8");
  static_assert(kHeadDim % 16 == 0, "the head-dim loops run whole k16 steps");
};

inline int mma_bucket(int d) { return d <= 64 ? 64 : d <= 128 ? 128 : 256; }
// The forward kernel a call runs (its KernelEntry's bucket): the exact head dim's where it has one and the
// call may take it (`exact`: no features).
inline int mma_fwd_head_dim(int d, int dv, bool exact) {
  if (exact && d == dv && mma_exact_head_dim(d)) return d;
  return mma_bucket(d > dv ? d : dv);
}
constexpr int kMmaMaxHeadDim = 256;

// Element offset of (row, col) in a [rows][kHeadDim] tile whose 16-byte chunks are XOR-swizzled by
// row % 8: ldmatrix reads of 8 rows at one logical chunk then hit 8 different bank groups.
template <int kHeadDim>
__host__ __device__ __forceinline__ int swizzle(int row, int col) {
  return row * kHeadDim + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

}  // namespace memeff
