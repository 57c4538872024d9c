// fp32 tiles in shared memory for the 3xTF32 kernels (fwd/fwd_tf32.cuh, bwd/bwd_tf32.cuh): cp.async
// copies into padded rows, and the in-place split of a tile into its TF32 parts.
#pragma once
#include <cstdint>

#include "common/mma_sm80.cuh"
#include "common/tf32x3.cuh"

namespace memeff {

// Element (r, c) of a kSwz tile (load_tile_f32_async): pitch = 8 mod 32 floats, and on rows with bit 2
// set the 16-byte chunks swapped in pairs. A fragments (row g, column t) and B fragments read across
// rows (row t, column g) of the same tile both hit 32 banks (bwd/tf32_bwd_traits.h).
template <int kPitch>
__device__ __forceinline__ int tf32_kv_index(int r, int c) {
  return r * kPitch + (c ^ (r & 4));
}

// Rows [row0, row0 + kRows) of a [seq][dim] fp32 matrix into a tile of pitch kPitch floats; rows
// past `rows` and columns past `cols` (a multiple of 4) are zero-filled.
// kSwz: 16-byte chunks of rows with bit 2 set swapped in pairs (column c at c ^ 4; tf32_kv_index).
template <int kRows, int kHeadDim, int kPitch, int kThreads, bool kSwz = false>
__device__ __forceinline__ void load_tile_f32_async(float* smem, const float* g, int64_t row_stride, int row0, int rows, int cols) {
  constexpr int kChunks = kHeadDim / 4;
#pragma unroll
  for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    const bool ok = row0 + r < rows && c * 4 < cols;
    const float* src = ok ? g + (row0 + r) * row_stride + c * 4 : g;
    cp_async_16(smem + r * kPitch + ((c * 4) ^ (kSwz ? (r & 4) : 0)), src, ok);
  }
}

// Rows [0, kRows) of a tile (pitch kPitch) split into TF32 parts: the float becomes its high part, the
// low part goes to `lo` (same pitch; split_tf32_lean). Columns past the head dim are zero (the loaders fill them) and split to zeros.
template <int kRows, int kHeadDim, int kPitch, int kThreads>
__device__ __forceinline__ void split_tile_to(float* tile, float* lo) {
  constexpr int kChunks = kHeadDim / 4;
  static_assert((kRows * kChunks) % kThreads == 0, "whole passes");
#pragma unroll
  for (int it = 0; it < kRows * kChunks / kThreads; ++it) {
    const int idx = threadIdx.x + it * kThreads, r = idx / kChunks, c = idx % kChunks;
    float* w = tile + r * kPitch + c * 4;
    const float4 x = *reinterpret_cast<const float4*>(w);
    const Tf32Pair a = split_tf32_lean(x.x), b = split_tf32_lean(x.y), c2 = split_tf32_lean(x.z), d = split_tf32_lean(x.w);
    *reinterpret_cast<uint4*>(w) = make_uint4(a.hi, b.hi, c2.hi, d.hi);
    *reinterpret_cast<uint4*>(lo + r * kPitch + c * 4) = make_uint4(a.lo, b.lo, c2.lo, d.lo);
  }
}

// v8 wide: a tile [kRows][kHeadDim] of pitch kPitch split in place: the float becomes its high TF32
// part; the low part (and with kRest the rest, split_tf32_exact_lean) goes to the same place kLo
// (kRestOff) words further. Columns past the head dim are zero (the loaders fill them) and split to zeros.
template <int kRows, int kHeadDim, int kPitch, int kThreads, int kLo, int kRestOff, bool kRest>
__device__ __forceinline__ void split_tile_in_place(float* tile) {
  if constexpr (!kRest) {
    split_tile_to<kRows, kHeadDim, kPitch, kThreads>(tile, tile + kLo);
  } else {
    constexpr int kChunks = kHeadDim / 4;
    static_assert((kRows * kChunks) % kThreads == 0, "whole passes");
#pragma unroll
    for (int it = 0; it < kRows * kChunks / kThreads; ++it) {
      const int idx = threadIdx.x + it * kThreads, r = idx / kChunks, c = idx % kChunks;
      uint32_t* w = reinterpret_cast<uint32_t*>(tile + r * kPitch + c * 4);
      const float4 x = *reinterpret_cast<const float4*>(w);
      const Tf32Triple a = split_tf32_exact_lean(x.x), b = split_tf32_exact_lean(x.y), c2 = split_tf32_exact_lean(x.z),
                       d = split_tf32_exact_lean(x.w);
      *reinterpret_cast<uint4*>(w) = make_uint4(a.hi, b.hi, c2.hi, d.hi);
      *reinterpret_cast<uint4*>(w + kLo) = make_uint4(a.lo, b.lo, c2.lo, d.lo);
      *reinterpret_cast<uint4*>(w + kRestOff) = make_uint4(a.rest, b.rest, c2.rest, d.rest);
    }
  }
}

}  // namespace memeff
