// Global -> shared copies of [rows][head dim] tiles for the tensor-core kernels (cp.async, 16-byte
// chunks, XOR-swizzled rows; see swizzle() in fwd/mma_traits.h).
#pragma once
#include <cstdint>

#include "common/toolkit.cuh"
#include "fwd/mma_traits.h"

namespace memeff {

// Rows [row0, row0 + kRows) of a [seq][dim] matrix (row stride in elements) into a swizzled tile of
// kHeadDim columns; rows past `rows` and columns past `cols` are zero-filled. Only the first kCols
// columns are written (a tile wider than the kernel's head dim: the rest is never read).
//
// flash-cuda's load_rows geometry: when the threads cover whole rows and the row step is a
// multiple of the swizzle period (8 rows), each thread owns one 16-byte column chunk of rows r0,
// r0 + kRowStep, ...: the shared destinations differ by compile-time constants and the sources by one
// 64-bit step, instead of one precomputed 64-bit source and shared address per copy (register
// pressure in the kernels that hold S and O while they issue K and V).
template <typename T, int kRows, int kHeadDim, int kThreads, int kCols = kHeadDim>
__device__ __forceinline__ void load_tile_async(T* smem, const T* g, int64_t row_stride, int row0, int rows, int cols) {
  static_assert(kCols % 8 == 0 && kCols <= kHeadDim, "whole chunks of the tile");
  constexpr int kChunks = kCols / 8;
  constexpr bool kStrided =
      kThreads % kChunks == 0 && (kThreads / kChunks) % 8 == 0 && kRows % (kThreads / kChunks) == 0;
  if constexpr (kStrided) {
    constexpr int kRowStep = kThreads / kChunks;
    const int c = threadIdx.x % kChunks, r0 = threadIdx.x / kChunks;
    const bool col_ok = c * 8 < cols;
    T* dst = smem + swizzle<kHeadDim>(r0, c * 8);  // row r0 + k * kRowStep: + k * kRowStep * kHeadDim
    const T* src = g + (static_cast<int64_t>(row0) + r0) * row_stride + c * 8;
    cp_async_column<kRows / kRowStep, kRowStep, kRowStep * kHeadDim>(dst, src, kRowStep * row_stride, g, col_ok,
                                                                     row0 + r0, rows);
  } else {
#pragma unroll
    for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kThreads) {
      const int r = idx / kChunks, c = idx % kChunks;
      const bool ok = row0 + r < rows && c * 8 < cols;
      const T* src = ok ? g + (row0 + r) * row_stride + c * 8 : g;
      cp_async_16(smem + swizzle<kHeadDim>(r, c * 8), src, ok ? 16 : 0);
    }
  }
}

}  // namespace memeff
