// Tile shapes of the SIMT (FMA) path, for every dtype and arch from sm50 on. The head dims are
// processed in chunks of kChunk columns for Q.K^T; the value columns in tiles of kDvTile per block
// (blockIdx.z walks the tiles when Dv is larger), so any head dim runs.
#pragma once

namespace memeff {

template <int kDvTile_>
struct SimtFwdTraits {
  static constexpr int kThreads = 128;
  static constexpr int kBlockM = 64;  // queries per block
  static constexpr int kBlockN = 32;  // keys per step
  static constexpr int kChunk = 32;   // head-dim columns per Q.K^T step
  static constexpr int kDvTile = kDvTile_;
  static constexpr int kTx = 8;                         // threads along keys / value columns
  static constexpr int kTy = kThreads / kTx;            // 16 threads along queries
  static constexpr int kRowsPerThread = kBlockM / kTy;  // 4
  static constexpr int kKeysPerThread = kBlockN / kTx;  // 4
  static constexpr int kColsPerThread = kDvTile / kTx;
  static constexpr int kPad = 1;  // +1 float per smem row: no bank conflicts on column reads
  static_assert(kDvTile % kTx == 0, "value tile must split over kTx threads");
};

// Head-dim buckets of the SIMT path (value tile per block).
constexpr int kSimtBuckets[] = {64, 128};
inline int simt_bucket(int dv) { return dv <= 64 ? 64 : 128; }

}  // namespace memeff
