// Tile shapes and derived constants of the forward kernel, apart from the kernel body (FlashAttention's
// Kernel_traits). One FwdTraits per generated instantiation (scripts/generate-instantiations.mjs).
//
// A CTA owns kBlockM query rows and walks the keys in kBlockN-key tiles. Its kNWarps warps split the
// rows: warp w owns the 16-row MMA tiles w*16 + mi*16*kNWarps for mi < kMTiles (FA2's split-Q), so warps
// never exchange partial results. Shared memory: one Q tile, one K tile and one V tile (FA2's pipeline:
// V_j loads behind Q.K_j^T, K_{j-1} loads behind softmax and P.V_j).
#pragma once
#include <cstdint>

#include "attn/ptx.h"

namespace attn::flash {

template <int kHeadDim_, int kBlockM_, int kBlockN_, int kNWarps_, bool kQInRegs_, typename Element_,
          bool kExtras_ = true>
struct FwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;  // the head-dim bucket; real D <= kHeadDim, padded with zeros
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr bool kQInRegs = kQInRegs_;  // Q fragments held in registers for the whole key loop
  // false: the lean kernel of the common call (no ALiBi, softcap, dropout or left window bound; causal,
  // right window, varlen, GQA and split-KV stay runtime). Dropping those paths at compile time frees the
  // registers that FA2's larger tiles need, and lets the softmax fold the scale into one FFMA per score.
  static constexpr bool kExtras = kExtras_;
  // Short query tiles (kBlockM <= 64: decode with split-KV, short queries) are load-bound: their key loop
  // issues K_{n-1} right after S = Q.K_n^T (one more barrier per tile) instead of after V_n has landed.
  static constexpr bool kEarlyK = kBlockM <= 64;

  static constexpr int kMTiles = kBlockM / (16 * kNWarps);  // 16-row MMA tiles per warp
  static constexpr int kNTiles = kBlockN / 8;               // n8 tiles of S per warp row tile
  static constexpr int kDTiles = kHeadDim / 8;              // n8 tiles of O
  static constexpr int kKSteps = kHeadDim / 16;             // k16 steps of Q.K^T
  static constexpr int kPSteps = kBlockN / 16;              // k16 steps of P.V

  // Shared memory: rows are stored in column blocks of kBlockKSmem elements (128 or 64 bytes), each
  // 16-byte chunk XOR-swizzled with the row so that ldmatrix (8 rows x 16 bytes) is conflict free.
  static constexpr int kBlockKSmem = kHeadDim % 64 == 0 ? 64 : 32;
  static constexpr int kChunksPerBlock = kBlockKSmem / 8;  // 8 or 4
  static constexpr int kChunksPerRow = kHeadDim / 8;

  static constexpr int kSmemQElems = kBlockM * kHeadDim;
  static constexpr int kSmemKVElems = kBlockN * kHeadDim;
  static constexpr int kSmemBytes = (kSmemQElems + 2 * kSmemKVElems) * 2;
  // Paged K/V calls also keep, after the V tile, two key tiles' worth of K and V row offsets (int64) and
  // block-table entries (int32; a tile of kBlockN keys spans at most kBlockN pages); launched only for
  // paged calls.
  static constexpr int kPageSlots = kBlockN;
  static constexpr int kPagedSmemBytes = kSmemBytes + 2 * kPageSlots * (8 + 8 + 4);

  static_assert(kHeadDim % 32 == 0 && kHeadDim <= 256, "head-dim buckets are multiples of 32 up to 256");
  static_assert(kBlockM % (16 * kNWarps) == 0 && kMTiles >= 1 && kMTiles <= 2, "1 or 2 row tiles per warp");
  static_assert(kBlockN % 16 == 0, "kBlockN is a multiple of 16");
  static_assert((kBlockM * kChunksPerRow) % kNThreads == 0, "Q tile chunks split evenly over threads");
  static_assert((kBlockN * kChunksPerRow) % kNThreads == 0, "K/V tile chunks split evenly over threads");
};

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of `rows` rows.
template <typename Tr>
__host__ __device__ __forceinline__ int swizzle_offset(int row, int chunk, int rows) {
  const int blk = chunk / Tr::kChunksPerBlock;
  const int c = chunk % Tr::kChunksPerBlock;
  const int sw = Tr::kChunksPerBlock == 8 ? (row & 7) : ((row >> 1) & 3);
  return blk * rows * Tr::kBlockKSmem + row * Tr::kBlockKSmem + ((c ^ sw) << 3);
}

// Per-lane ldmatrix addressing into a swizzled tile of kRows rows. A lane reads row R0 + lane_row and
// chunk C0 + lane_chunk (R0 a multiple of 8, C0 even, lane_chunk 0 or 1), so the swizzle reduces to one
// per-lane XOR term: (C0 % kChunksPerBlock) ^ x with x = lane_chunk ^ swizzle(lane_row).
template <typename Tr, int kRows>
struct LdsmAddr {
  uint32_t base;  // shared address of (lane_row, block 0, chunk 0)
  int x;
  LdsmAddr() = default;
  __device__ __forceinline__ LdsmAddr(uint32_t tile, int lane_row, int lane_chunk) {
    const int sw = Tr::kChunksPerBlock == 8 ? (lane_row & 7) : ((lane_row >> 1) & 3);
    base = tile + lane_row * Tr::kBlockKSmem * 2;
    x = lane_chunk ^ sw;
  }
  // The same addressing with the base and XOR term re-read through opaque(): call once per loop iteration.
  __device__ __forceinline__ LdsmAddr fresh() const {
    LdsmAddr a = *this;
    a.base = opaque(base);
    a.x = static_cast<int>(opaque(static_cast<uint32_t>(x)));
    return a;
  }
  __device__ __forceinline__ uint32_t at(int r0, int c0) const {
    return base + ((c0 / Tr::kChunksPerBlock) * kRows * Tr::kBlockKSmem + r0 * Tr::kBlockKSmem +
                   (((c0 % Tr::kChunksPerBlock) ^ x) << 3)) *
                      2;
  }
};

}  // namespace attn::flash
