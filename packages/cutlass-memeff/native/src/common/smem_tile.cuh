// Global -> shared copies of [rows][head dim] tiles for the tensor-core kernels (cp.async, 16-byte
// chunks, XOR-swizzled rows; see swizzle() in fwd/mma_traits.h).
#pragma once
#include <cstdint>

#include "common/mma_sm80.cuh"
#include "fwd/mma_traits.h"

namespace memeff {

// Rows [row0, row0 + kRows) of a [seq][dim] matrix (row stride in elements) into a swizzled tile;
// rows past `rows` and columns past `cols` are zero-filled.
template <typename T, int kRows, int kHeadDim, int kThreads>
__device__ __forceinline__ void load_tile_async(T* smem, const T* g, int64_t row_stride, int row0, int rows, int cols) {
  constexpr int kChunks = kHeadDim / 8;
#pragma unroll
  for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    const bool ok = row0 + r < rows && c * 8 < cols;
    const T* src = ok ? g + (row0 + r) * row_stride + c * 8 : g;
    cp_async_16(smem + swizzle<kHeadDim>(r, c * 8), src, ok);
  }
}

}  // namespace memeff
