// Tile shapes of the tensor-core path (fp16/bf16, sm80+, head dims multiples of 8). kHeadDim is a
// bucket: D and Dv up to it run, zero-padded in shared memory to the bucket.
#pragma once

namespace memeff {

template <int kHeadDim_>
struct MmaFwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kNWarps = 4;
  static constexpr int kThreads = kNWarps * 32;
  // Blocks per SM that ptxas plans registers for: at 3 (its own choice at d128) it spilled on sm_80.
  static constexpr int kMinBlocksPerSm = kHeadDim <= 64 ? 3 : kHeadDim <= 128 ? 2 : 1;
  static constexpr int kBlockM = 16 * kNWarps;            // each warp owns 16 query rows
  static constexpr int kBlockN = kHeadDim <= 128 ? 64 : 32;  // keys per step
  static constexpr int kChunks = kHeadDim / 8;             // 16-byte chunks per smem row
  static constexpr int kNTiles = kBlockN / 8;              // n8 tiles of S per warp
  static constexpr int kOTiles = kHeadDim / 8;             // n8 tiles of O per warp
  // Q, K, V tiles in 16-bit elements, one buffer each (K(j+1) loads during P.V, V(j) during Q.K^T).
  static constexpr int kSmemQ = kBlockM * kHeadDim;
  static constexpr int kSmemK = kBlockN * kHeadDim;
  static constexpr int kSmemBytes = (kSmemQ + 2 * kSmemK) * 2;
  static_assert(kChunks >= 8, "the XOR swizzle needs at least 8 chunks per row");
};

constexpr int kMmaBuckets[] = {64, 128, 256};
inline int mma_bucket(int d) { return d <= 64 ? 64 : d <= 128 ? 128 : 256; }
constexpr int kMmaMaxHeadDim = 256;

// Element offset of (row, col) in a [rows][kHeadDim] tile whose 16-byte chunks are XOR-swizzled by
// row % 8: ldmatrix reads of 8 rows at one logical chunk then hit 8 different bank groups.
template <int kHeadDim>
__host__ __device__ __forceinline__ int swizzle(int row, int col) {
  return row * kHeadDim + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

}  // namespace memeff
