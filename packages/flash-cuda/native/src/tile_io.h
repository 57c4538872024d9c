// Global <-> shared memory movement of one tile: cp.async 16-byte copies into the swizzled layout
// (zero-filled past the sequence end and past the real head dim), or, when the tensors are not 16-byte
// aligned (D % 8 != 0, odd strides), element-wise loads into the same layout. The path is one uniform
// runtime branch; no hidden copies of the inputs.
#pragma once
#include <cstdint>

#include "kernel_traits.h"
#include "ptx.h"

namespace attn::flash {

template <typename Tr>
struct TileIO {
  using E = typename Tr::Element;

  // Loads kRows rows. row_ptr(row) gives the global address of the row's element 0, or nullptr past the
  // end (zero-filled). `zero_src` is any valid global address (never read: cp.async with src-size 0).
  template <int kRows, typename RowPtr>
  __device__ __forceinline__ static void load(E* smem, RowPtr row_ptr, int d, bool aligned16,
                                              const E* zero_src, int tid) {
    constexpr int kChunks = kRows * Tr::kChunksPerRow;
    static_assert(kChunks % Tr::kNThreads == 0, "chunks split evenly");
    if (aligned16) {
#pragma unroll
      for (int it = 0; it < kChunks / Tr::kNThreads; ++it) {
        const int idx = it * Tr::kNThreads + tid;
        const int row = idx / Tr::kChunksPerRow, chunk = idx % Tr::kChunksPerRow;
        const E* src = row_ptr(row);
        const bool ok = src != nullptr && chunk * 8 < d;
        cp_async_16(smem_addr(smem + swizzle_offset<Tr>(row, chunk, kRows)), ok ? src + chunk * 8 : zero_src,
                    ok ? 16 : 0);
      }
    } else {
#pragma unroll 1
      for (int it = 0; it < kChunks / Tr::kNThreads; ++it) {
        const int idx = it * Tr::kNThreads + tid;
        const int row = idx / Tr::kChunksPerRow, chunk = idx % Tr::kChunksPerRow;
        const uint16_t* src = reinterpret_cast<const uint16_t*>(row_ptr(row));
        uint16_t v[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int col = chunk * 8 + e;
          v[e] = (src != nullptr && col < d) ? src[col] : uint16_t(0);
        }
        uint4 packed;
        packed.x = v[0] | (uint32_t(v[1]) << 16);
        packed.y = v[2] | (uint32_t(v[3]) << 16);
        packed.z = v[4] | (uint32_t(v[5]) << 16);
        packed.w = v[6] | (uint32_t(v[7]) << 16);
        *reinterpret_cast<uint4*>(smem + swizzle_offset<Tr>(row, chunk, kRows)) = packed;
      }
    }
  }

  // Stores kRows rows of a swizzled tile; row_ptr(row) == nullptr skips the row. Columns >= d are not written.
  template <int kRows, typename RowPtr>
  __device__ __forceinline__ static void store(const E* smem, RowPtr row_ptr, int d, bool aligned16, int tid) {
    constexpr int kChunks = kRows * Tr::kChunksPerRow;
#pragma unroll
    for (int it = 0; it < kChunks / Tr::kNThreads; ++it) {
      const int idx = it * Tr::kNThreads + tid;
      const int row = idx / Tr::kChunksPerRow, chunk = idx % Tr::kChunksPerRow;
      E* dst = row_ptr(row);
      if (dst == nullptr || chunk * 8 >= d) continue;
      const E* src = smem + swizzle_offset<Tr>(row, chunk, kRows);
      if (aligned16) {
        *reinterpret_cast<uint4*>(dst + chunk * 8) = *reinterpret_cast<const uint4*>(src);
      } else {
        for (int e = 0; e < 8 && chunk * 8 + e < d; ++e) dst[chunk * 8 + e] = src[e];
      }
    }
  }
};

}  // namespace attn::flash
