// A [kRows][kCols] tile of the bias / boolean mask staged in shared memory by cp.async, next to the
// K and V tiles, instead of one dependent global load per score element after Q.K^T (v1: the bias
// loads sat on the critical path of every tile, 16 useful bytes of each 32-byte sector).
//
// Usable when the mask's last dim is contiguous, its row stride is a multiple of 16 bytes (or 0:
// broadcast over queries), its (b, h) base is 16-byte aligned and its element is 1, 2 or 4 bytes;
// otherwise the kernels read the mask from global memory per element (masked_logit) as before.
#pragma once
#include <cstdint>

#include "common/mma_sm80.cuh"
#include "common/score_mods.cuh"

namespace memeff {

template <int kRows, int kCols>
struct MaskTile {
  // Row pitch: the widest element (4 bytes) plus 16 bytes of padding, so that the 8 rows a warp's
  // quads read at once do not all start on the same bank.
  static constexpr int kPitch = kCols * 4 + 16;
  static constexpr int kBytes = kRows * kPitch;
};

__device__ __forceinline__ int mask_esize(int32_t dtype) {
  return dtype == kF32 ? 4 : dtype == kBoolean ? 1 : (dtype == kF16 || dtype == kBF16) ? 2 : 0;
}

// Whether this block's mask can go through shared memory (uniform per block).
__device__ __forceinline__ bool mask_tile_ok(const MaskView& m) {
  if (m.kind == MaskKind::kNone) return false;
  const int es = mask_esize(m.dtype);
  return es != 0 && m.stride_j == 1 && (m.stride_i * es) % 16 == 0 && (reinterpret_cast<uintptr_t>(m.base) & 15u) == 0;
}

// Rows [i0, i0 + kRows) x columns [j0, j0 + kCols) of the mask into `tile`; out-of-range rows and
// columns are zero-filled (their scores are removed by the bounds check in tile_logit).
template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void load_mask_tile_async(unsigned char* tile, const MaskView& m, int i0, int j0, int seq_q, int seq_k) {
  using Tile = MaskTile<kRows, kCols>;
  const int es = mask_esize(m.dtype);
  const int chunks = kCols * es / 16;  // 16-byte chunks per row
  const int per_chunk = 16 / es;       // elements per chunk
  for (int idx = threadIdx.x; idx < kRows * chunks; idx += kThreads) {
    const int r = idx / chunks, c = idx % chunks;
    const int i = i0 + r, j = j0 + c * per_chunk;
    const int valid = i < seq_q ? min(max(seq_k - j, 0), per_chunk) * es : 0;
    const unsigned char* src = static_cast<const unsigned char*>(m.base) + (static_cast<int64_t>(i) * m.stride_i + j) * es;
    cp_async_16_partial(tile + r * Tile::kPitch + c * 16, valid > 0 ? src : static_cast<const unsigned char*>(m.base), valid);
  }
}

// masked_logit with the mask element read from the staged tile at (il, jl) = (i - i0, j - j0).
template <int kRows, int kCols>
__device__ __forceinline__ float tile_logit(const FwdParams& p, const MaskView& m, const unsigned char* tile, int i, int j, int il,
                                            int jl, float dot) {
  if (i >= p.seq_q || j >= p.seq_k || (p.causal && j > i + p.causal_offset)) return -INFINITY;
  const unsigned char* row = tile + il * MaskTile<kRows, kCols>::kPitch;
  float s = dot * p.scale;
  switch (m.dtype) {
    case kBoolean: return row[jl] == 0 ? -INFINITY : s;
    case kF16: return s + __half2float(reinterpret_cast<const __half*>(row)[jl]);
    case kBF16: return s + __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[jl]);
    default: return s + reinterpret_cast<const float*>(row)[jl];
  }
}

}  // namespace memeff
