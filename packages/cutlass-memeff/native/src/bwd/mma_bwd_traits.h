// Tile shapes of the tensor-core backward (fp16/bf16, sm80+, head dims multiples of 8 up to the
// bucket). One block owns kBlockN keys of one kv head and kColSplit-th of their dK/dV/dQ columns; each
// step takes kBlockM queries.
#pragma once

namespace memeff {

template <int kHeadDim_>
struct MmaBwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  // 8 warps, 128 keys per block (FlashAttention-2's backward block). Each step's Q, dO, lse and D tiles
  // and each dQ atomic serve 128 keys: half the Q/dO traffic from L2 and half the dQ atomics per FLOP
  // against 4 warps of 64 keys. Each warp owns 16 keys either way, so the registers per thread and the
  // 8 warps per SM are the same (one block).
  static constexpr int kNWarps = 8;
  static constexpr int kThreads = kNWarps * 32;
  static constexpr int kBlockN = 16 * kNWarps;  // keys: each warp owns 16 (rows of S^T, dK, dV)
  static constexpr int kBlockM = 32;            // queries per step
  static constexpr int kChunks = kHeadDim / 8;
  static constexpr int kQTiles = kBlockM / 8;  // n8 tiles of S^T per warp
  // Above 128 columns a warp's 16 keys x D accumulators of dK and dV (2 * D / 4 floats a thread) would
  // not fit in registers, so the dK/dV/dQ columns split over kColSplit blocks of the same keys. Each
  // recomputes S^T and dP^T over the whole head dim (2 of the backward's 5 GEMMs run twice: 7/5 of the
  // FLOPs, on tensor cores, against the FMA path's dozen times slower rate) and owns kColumns columns:
  // the register footprint of the d128 kernel.
  static constexpr int kColSplit = kHeadDim > 128 ? 2 : 1;
  static constexpr int kColumns = kHeadDim / kColSplit;
  static constexpr int kDTiles = kColumns / 8;  // n8 tiles of dK / dV per warp
  // dQ = dS K: warps split 2 (query halves of 16) x kNWarps / 2 (slices of kDqCols of the block's columns).
  static constexpr int kDqCols = kColumns * 2 / kNWarps;
  static_assert(kDqCols % 16 == 0, "dQ column slices are whole k16 pairs of n8 tiles");
  static constexpr int kDsStride = kBlockM + 8;  // dS^T row stride (elements): conflict-free ldmatrix
  // K, V (kBlockN rows), Q and dO double-buffered (kBlockM rows), dS^T, then lse and D (floats).
  static constexpr int kSmemK = kBlockN * kHeadDim;
  static constexpr int kSmemQ = kBlockM * kHeadDim;
  static constexpr int kSmemDs = kBlockN * kDsStride;
  static constexpr int kSmemBytes = (2 * kSmemK + 4 * kSmemQ + kSmemDs) * 2 + 2 * 2 * kBlockM * 4;
  // Plus, when the call has a mask, two [kBlockM][kBlockN] mask tiles (MaskTile, common/mask_tile.cuh),
  // except where the tiles above leave no room for them (d256: 207 KB of 227): the steps then read the
  // mask from global memory.
  static constexpr int kSmemMaskBytes = 2 * kBlockM * (kBlockN * 4 + 16);
  static constexpr bool kStageMask = kHeadDim <= 128;
  // Plus, with BwdParams::dbias_presum, each thread's dS fragment (kQTiles x 4 floats) summed over
  // the GQA group's heads so far, [kQTiles * 4][kThreads] (thread-private slots, conflict-free).
  static constexpr int kSmemPresumBytes = kQTiles * 4 * kThreads * 4;
  static constexpr int kMinBlocksPerSm = 1;
  static_assert(kChunks >= 8, "the XOR swizzle needs at least 8 chunks per row");
};

// The deterministic dQ pass of the tensor-core path: one block per 64 queries (16 per warp) walks the
// key blocks in order; K and V double-buffered.
template <int kHeadDim_>
struct MmaDqTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kNWarps = 4;
  static constexpr int kThreads = kNWarps * 32;
  static constexpr int kBlockM = 16 * kNWarps;
  static constexpr int kBlockN = 64;
  static constexpr int kNTiles = kBlockN / 8;
  static constexpr int kDTiles = kHeadDim / 8;
  static constexpr int kSmemTile = 64 * kHeadDim;  // Q, dO, K[2], V[2]
  static constexpr int kSmemBytes = 6 * kSmemTile * 2;
  static constexpr int kMinBlocksPerSm = kHeadDim <= 64 ? 2 : 1;
};

constexpr int kMmaBwdBuckets[] = {64, 128, 256};
constexpr int kMmaBwdMaxHeadDim = 256;

}  // namespace memeff
