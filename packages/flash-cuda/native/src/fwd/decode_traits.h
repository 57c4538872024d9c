// Tile shape of the decode kernel (fwd/flash_fwd_decode_kernel.h): one 16-row query tile (the packed rows of
// a decode step: Sq x the GQA group, at most 16) against a ring of kStages key tiles of kBlockN keys, one warp
// per 16 keys of a tile (warp w: keys 16w .. 16w + 15), so every warp multiplies all 16 rows against its own
// keys and the warps merge once at the end. The warp count is also the CTA's copy issuers: an SM streams K/V
// at a rate that follows the warps issuing its cp.async (H100: ~31 GB/s with 4, ~48 with 8), so a 128-key
// tile (8 warps) lets one CTA per SM stream what two 64-key CTAs do. The members the shared forward pieces read
// (TileIO, swizzle_offset, LdsmAddr, gemm_qk / gemm_pv, kv_fused.h) have FwdTraits' meaning.
#pragma once
#include <cstdint>

namespace attn::flash {

// Splits of a decode row tile merged in one thread-block cluster (FwdParams::cluster_splits): pairs. Clusters of
// 3-8 lost to the combine wherever the grid was larger than a few clusters (H200, decode_stream_probe --kernels:
// 4 splits x 32 row tiles 55.6 us against 37.1; likely, not profiled: a large cluster's CTAs placed two to an
// SM), so more splits go through the partials and the combine kernel.
constexpr int kMaxClusterSplits = 2;

template <int kHeadDim_, int kBlockN_, int kStages_, typename Element_>
struct DecodeTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = 16;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kStages = kStages_;  // key tiles in flight: kStages - 1 while one is multiplied
  static constexpr int kNWarps = kBlockN / 16;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kKeysPerWarp = kBlockN / kNWarps;
  static constexpr bool kExtras = false;  // the lean feature set (dispatch.cu lean_ok)
  static constexpr bool kQInRegs = true;

  // A warp's GEMMs (fwd/fwd_gemm.h): one 16-row tile, its kKeysPerWarp keys.
  static constexpr int kMTiles = 1;
  static constexpr int kNTiles = kKeysPerWarp / 8;
  static constexpr int kPSteps = kKeysPerWarp / 16;
  static constexpr int kDTiles = kHeadDim / 8;
  static constexpr int kKSteps = kHeadDim / 16;

  // Shared memory layout of every tile: 64-element (128-byte) column blocks, chunks XOR-swizzled by row % 8.
  static constexpr int kBlockKSmem = 64;
  static constexpr int kChunksPerBlock = 8;
  static constexpr int kChunksPerRow = kHeadDim / 8;
  static constexpr int kSmemQElems = kBlockM * kHeadDim;
  static constexpr int kTileElems = kBlockN * kHeadDim;  // one K or one V tile
  static constexpr int kStageElems = 2 * kTileElems;     // K then V
  static constexpr int kRingBytes = kStages * kStageElems * 2;
  // The warps' merge reuses the ring: each warp's O rows (float, padded by 4 against bank conflicts), then
  // its row maxima and sums, then the CTA's merged part (O rows, maxima, sums) that a cluster's splits read.
  static constexpr int kMergeStride = kHeadDim + 4;
  static constexpr int kMergeBytes = (kNWarps + 1) * kBlockM * (kMergeStride + 2) * 4;
  // Paged calls' staged row offsets (K and V, int64) of two key tiles, after the ring.
  static constexpr int kOffsetBytes = 2 * 2 * kBlockN * 8;
  static constexpr int kOffsetsAt = kRingBytes > kMergeBytes ? kRingBytes : kMergeBytes;  // bytes past the ring's start
  // Paged calls' block-table entries (int32, one per key row) of the tiles 2 kStages ahead, a ring of
  // kEntrySlots tiles after the offsets (the kernel's copy_entry says why that far).
  static constexpr int kEntrySlots = 2 * kStages_ > 8 ? 2 * kStages_ : 8;
  static constexpr int kEntriesAt = kOffsetsAt + kOffsetBytes;
  static constexpr int kSmemBytes = kSmemQElems * 2 + kEntriesAt + kEntrySlots * kBlockN * 4;

  // A thread's cp.async copies of a key tile: one 16-byte column chunk (tid % kChunksPerRow) of the rows
  // tid / kChunksPerRow + k * kRowStep, kRowStep a multiple of the swizzle period (destinations differ by
  // constants).
  static constexpr int kRowStep = kNThreads / kChunksPerRow;
  static constexpr int kRowsPerThread = kBlockN / kRowStep;

  static_assert(kHeadDim % 64 == 0 && kHeadDim <= 128, "D 64 or 128: O and Q fragments stay in registers");
  static_assert(kKeysPerWarp == 16, "one k16 step of P.V per warp and key tile");
  static_assert(kRowStep % 8 == 0 && kBlockN % kRowStep == 0, "copies in whole swizzle periods");
  static_assert(kStages >= 3, "a ring (and the staged offsets' two buffers) of three tiles at least");
  static_assert(kBlockN <= kNThreads, "a thread stages each row's offsets");
  static_assert(kEntrySlots >= 2 * kStages, "the prologue's entries (2 kStages tiles) are live at once");
  static_assert(kMergeStride % 4 == 0 && (kNWarps * kBlockM * (kMergeStride + 2)) % 4 == 0,
                "the cluster part's rows are 16-byte aligned (float4 stores and loads)");
};

}  // namespace attn::flash
