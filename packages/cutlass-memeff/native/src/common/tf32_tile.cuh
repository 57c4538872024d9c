// fp32 tiles in shared memory for the 3xTF32 kernels (fwd/fwd_tf32.cuh, bwd/bwd_tf32.cuh): cp.async
// copies into padded rows, and the in-place split of a tile into its TF32 parts.
#pragma once
#include <cstdint>

#include "common/toolkit.cuh"
#include "common/tf32x3.cuh"

namespace memeff {

// Element (r, c) of a tile of {hi, lo} pairs (8 bytes each) with a pitch of 4 mod 16 pairs: on rows with
// bit 2 set, column bit 2 is flipped. Reads of (row g, column t) and of (row t, column g) over a warp's
// lanes (g = lane / 4, t = lane % 4; an 8-byte load is served per half warp) then both hit 16 distinct
// 8-byte bank pairs per phase (bwd/tf32_bwd_traits.h).
template <int kPitch2>
__device__ __forceinline__ int tf32_pair_index(int r, int c) {
  return r * kPitch2 + (c ^ (r & 4));
}

// Rows [row0, row0 + kRows) of a [seq][dim] fp32 matrix into a tile of pitch kPitch floats; rows
// past `rows` and columns past `cols` (a multiple of 4) are zero-filled.
template <int kRows, int kHeadDim, int kPitch, int kThreads>
__device__ __forceinline__ void load_tile_f32_async(float* smem, const float* g, int64_t row_stride, int row0, int rows,
                                                    int cols) {
  constexpr int kChunks = kHeadDim / 4;
  // A thread's 16-byte column is the same on every pass and its rows are kRowStep apart: one 64-bit
  // address, then an add per pass (a loop over chunk indices took a 64-bit multiply and the bounds per chunk:
  // ~100 issues per tile per warp in the fp32 forward's ncu).
  static_assert(kThreads % kChunks == 0 && (kRows * kChunks) % kThreads == 0, "threads cover whole rows, whole passes");
  constexpr int kRowStep = kThreads / kChunks;
  const int c = threadIdx.x % kChunks, r0 = threadIdx.x / kChunks;
  const float* src = g + (row0 + r0) * row_stride + c * 4;
  cp_async_column<kRows / kRowStep, kRowStep, kRowStep * kPitch>(smem + r0 * kPitch + c * 4, src, kRowStep * row_stride,
                                                                 g, c * 4 < cols, row0 + r0, rows);
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
    const Tf32Pair a = split_tf32_lean(x.x), b = split_tf32_lean(x.y), c2 = split_tf32_lean(x.z),
                   d = split_tf32_lean(x.w);
    *reinterpret_cast<uint4*>(w) = make_uint4(a.hi, b.hi, c2.hi, d.hi);
    *reinterpret_cast<uint4*>(lo + r * kPitch + c * 4) = make_uint4(a.lo, b.lo, c2.lo, d.lo);
  }
}

// A raw [kRows][kHeadDim] tile (pitch kHeadDim) into a tile of {hi, lo} pairs (tf32_pair_index, pitch
// kPitch2 pairs; split_tf32_lean). `raw` may overlap `pairs`: every thread reads all its elements first,
// then the block synchronizes, then it writes. Columns past the head dim are zero (the loaders fill them).
template <int kRows, int kHeadDim, int kPitch2, int kThreads>
__device__ __forceinline__ void split_tile_to_pairs(const float* raw, float* pairs) {
  constexpr int kItems = kRows * kHeadDim / 4 / kThreads;  // 4 adjacent columns per item
  static_assert(kRows * kHeadDim / 4 % kThreads == 0, "whole passes");
  float4 x[kItems];
#pragma unroll
  for (int it = 0; it < kItems; ++it) x[it] = reinterpret_cast<const float4*>(raw)[threadIdx.x + it * kThreads];
  __syncthreads();
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int idx = threadIdx.x + it * kThreads, r = idx / (kHeadDim / 4), c = (idx % (kHeadDim / 4)) * 4;
    const Tf32Pair a = split_tf32_lean(x[it].x), b = split_tf32_lean(x[it].y), c2 = split_tf32_lean(x[it].z),
                   d = split_tf32_lean(x[it].w);
    // Columns c..c+3 stay adjacent under the flip of bit 2 (c is a multiple of 4): two 16-byte stores.
    float* w = pairs + 2 * tf32_pair_index<kPitch2>(r, c);
    *reinterpret_cast<uint4*>(w) = make_uint4(a.hi, a.lo, b.hi, b.lo);
    *reinterpret_cast<uint4*>(w + 4) = make_uint4(c2.hi, c2.lo, d.hi, d.lo);
  }
}

}  // namespace memeff
