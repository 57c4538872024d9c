// Tile shapes of the SIMT backward (every dtype, every arch, any head dims). One 32x32 tile of the
// score matrix is recomputed per step; accumulators cover kTile head-dim columns per block
// (blockIdx.z walks the tiles when a head dim is larger).
#pragma once

namespace memeff {

template <int kTile_>
struct SimtBwdTraits {
  static constexpr int kThreads = 128;
  static constexpr int kBlockM = 32;  // queries per tile
  static constexpr int kBlockN = 32;  // keys per tile
  static constexpr int kChunk = 32;   // head-dim columns per smem chunk
  static constexpr int kTx = 8, kTy = 16;
  static constexpr int kTile = kTile_;
  static constexpr int kChunksPerTile = kTile / kChunk;
  static constexpr int kColsPerChunk = kChunk / kTx;  // 4 columns per thread and chunk
  static_assert(kTile % kChunk == 0, "tile must be whole chunks");
};

// The shared memory of one block: two operand chunks and the two tiles the consumers read.
struct BwdTileSmem {
  float a[32][33];   // rows = queries (Q or dO chunk)
  float b[32][33];   // rows = keys (K or V chunk)
  float pd[32][33];  // P with dropout applied (dV += Pd^T dO)
  float ds[32][33];  // dS = P * (dP - D), the gradient of the score (dbias)
  float dx[32][33];  // dS times the softcap derivative, the gradient of scale * q.k (dK += dX^T Q, dQ += dX K)
};

}  // namespace memeff
