// Global <-> shared memory movement of one tile: cp.async 16-byte copies into the swizzled layout
// (zero-filled past the sequence end and past the real head dim), or, when the tensors are not 16-byte
// aligned (D % 8 != 0, odd strides), element-wise loads into the same layout. The path is one uniform
// runtime branch; no hidden copies of the inputs.
#pragma once
#include <cstdint>

#include "common/kernel_traits.h"
#include "attn/ptx.h"

namespace attn::flash {

// Key j of a paged sequence is row j % page_size of block table[j / page_size] (FwdParams.block_table).
// The division is a multiply-shift: FwdParams.page_div_mul (0: page size 1) and page_div_shift.
struct PageLocator {
  int page_size;
  uint32_t div_mul;
  int div_shift;
  int pos0;  // table position of key 0 (SeqExtents.k_pos0): key j is position pos0 + j

  // page = (pos0 + j) / page_size, in_page = (pos0 + j) % page_size (0 <= pos0 + j < 2^31).
  __device__ __forceinline__ void locate(int j, int& page, int& in_page) const {
    j += pos0;
    page = div_mul == 0 ? j : static_cast<int>(__umulhi(static_cast<uint32_t>(j), div_mul) >> div_shift);
    in_page = j - page * page_size;
  }
};

// One 16-byte chunk (8 elements) of a row copied element-wise into its swizzled place (tensors not
// 16-byte aligned): columns >= d, and every column of a null row, become zero.
template <typename Tr, int kRows, typename E>
__device__ __forceinline__ void copy_chunk_elementwise(E* smem, const E* row_src, int row, int chunk, int d) {
  const uint16_t* src = reinterpret_cast<const uint16_t*>(row_src);
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

template <typename Tr>
struct TileIO {
  using E = typename Tr::Element;

  // Loads kRows rows. row_ptr(row) gives the global address of the row's element 0, or nullptr past the
  // end (zero-filled). `zero_src` is any valid global address (never read: cp.async with src-size 0).
  template <int kRows, typename RowPtr>
  __device__ __forceinline__ static void load(E* smem, RowPtr row_ptr, int d, bool aligned16, const E* zero_src,
                                              int tid) {
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
        copy_chunk_elementwise<Tr, kRows>(smem, row_ptr(row), row, chunk, d);
      }
    }
  }

  // The key loop's K and V tiles: rows tile_row0 + r * row_stride, the first rows_valid of them real (the
  // rest zero-filled). Register pressure decides the shape of this code: the kernel holds O and S in
  // registers while it issues K_{n-1}, and the generic path above lets the compiler precompute one 64-bit
  // source and one shared address per copy across the loop (~60 registers for a 128-row tile).
  //  - strided geometry (each thread owns one 16-byte column chunk, rows r0, r0 + kRowStep, ... with
  //    kRowStep a multiple of the 8-row swizzle period): the shared destinations differ by compile-time
  //    constants (immediate offsets) and the sources by one 64-bit step: a handful of registers;
  //  - block-strided geometry (kStrided's rows would step by less than the swizzle period, e.g. D 256 over
  //    128 threads): each thread owns one chunk of every 64-column block, rows kNThreads / 8 apart: the
  //    blocks are immediate offsets too;
  //  - the element-wise path (misaligned tensors) lives in a separate, non-inlined function so that its
  //    temporaries never count against the aligned loop.
  template <int kRows>
  __device__ __forceinline__ static void load_rows(E* smem, const E* tile_row0, int64_t row_stride, int rows_valid,
                                                   int d, bool aligned16, const E* zero_src, int tid) {
    constexpr bool kStrided = Tr::kNThreads % Tr::kChunksPerRow == 0 && (Tr::kNThreads / Tr::kChunksPerRow) % 8 == 0;
    // Whole 64-column blocks and too few threads per row for kStrided (D 256 over 128 producer threads).
    constexpr bool kBlockStrided = Tr::kChunksPerBlock == 8 && Tr::kChunksPerRow % Tr::kChunksPerBlock == 0 &&
                                   Tr::kNThreads % 64 == 0 && kRows % (Tr::kNThreads / 8) == 0;
    if constexpr (kStrided) {
      if (aligned16) {
        constexpr int kRowStep = Tr::kNThreads / Tr::kChunksPerRow;
        const int chunk = tid % Tr::kChunksPerRow, r0 = tid / Tr::kChunksPerRow;
        const bool col_ok = chunk * 8 < d;
        const uint32_t dst = smem_addr(smem + swizzle_offset<Tr>(r0, chunk, kRows));
        const E* src = tile_row0 + r0 * row_stride + chunk * 8;
        const int64_t step = kRowStep * row_stride;
#pragma unroll
        for (int it = 0; it < kRows / kRowStep; ++it) {
          const bool ok = col_ok && r0 + it * kRowStep < rows_valid;
          cp_async_16(dst + it * kRowStep * Tr::kBlockKSmem * 2, ok ? src : zero_src, ok ? 16 : 0);
          src += step;
        }
      } else {
        load_rows_elementwise<kRows>(smem, tile_row0, row_stride, rows_valid, d, tid);
      }
    } else if constexpr (kBlockStrided) {
      if (aligned16) {
        // Each thread owns chunk c of every 64-column block in rows r0, r0 + kRowStep, ...: the blocks are
        // compile-time offsets from one row pointer and one shared address, the rows one 64-bit step.
        constexpr int kRowStep = Tr::kNThreads / Tr::kChunksPerBlock;
        constexpr int kBlocks = Tr::kChunksPerRow / Tr::kChunksPerBlock;
        const int c = tid % Tr::kChunksPerBlock, r0 = tid / Tr::kChunksPerBlock;
        const uint32_t dst = smem_addr(smem + swizzle_offset<Tr>(r0, c, kRows));
        const E* src = tile_row0 + r0 * row_stride + c * 8;
        const int64_t step = kRowStep * row_stride;
#pragma unroll
        for (int it = 0; it < kRows / kRowStep; ++it) {
          const bool row_ok = r0 + it * kRowStep < rows_valid;
#pragma unroll
          for (int b = 0; b < kBlocks; ++b) {
            const bool ok = row_ok && b * Tr::kBlockKSmem + c * 8 < d;
            cp_async_16(dst + (it * kRowStep + b * kRows) * Tr::kBlockKSmem * 2,
                        ok ? src + b * Tr::kBlockKSmem : zero_src, ok ? 16 : 0);
          }
          src += step;
        }
      } else {
        load_rows_elementwise<kRows>(smem, tile_row0, row_stride, rows_valid, d, tid);
      }
    } else {  // other geometries (D = 96, 160, 192, 224, ...) keep the inline generic path: fewer spills there
      load<kRows>(
          smem, [=](int row) -> const E* { return row < rows_valid ? tile_row0 + row * row_stride : nullptr; }, d,
          aligned16, zero_src, tid);
    }
  }

  // load_rows for paged K/V: rows 0 .. kRows - 1 of a key tile, the first rows_valid real, row r at
  // head_base + offsets[r] (element offsets in the pool, computed once per tile in shared memory by the
  // kernel from the staged block-table entries): one shared load per row in place of the contiguous
  // path's pointer step.
  template <int kRows>
  __device__ __forceinline__ static void load_rows_paged(E* smem, const E* head_base, const int64_t* offsets,
                                                         int rows_valid, int d, bool aligned16, const E* zero_src,
                                                         int tid) {
    constexpr bool kStrided = Tr::kNThreads % Tr::kChunksPerRow == 0 && (Tr::kNThreads / Tr::kChunksPerRow) % 8 == 0;
    if constexpr (kStrided) {
      if (aligned16) {
        constexpr int kRowStep = Tr::kNThreads / Tr::kChunksPerRow;
        const int chunk = tid % Tr::kChunksPerRow, r0 = tid / Tr::kChunksPerRow;
        const bool col_ok = chunk * 8 < d;
        const uint32_t dst = smem_addr(smem + swizzle_offset<Tr>(r0, chunk, kRows));
        const E* base = head_base + chunk * 8;
#pragma unroll
        for (int it = 0; it < kRows / kRowStep; ++it) {
          const bool ok = col_ok && r0 + it * kRowStep < rows_valid;
          cp_async_16(dst + it * kRowStep * Tr::kBlockKSmem * 2, ok ? base + offsets[r0 + it * kRowStep] : zero_src,
                      ok ? 16 : 0);
        }
        return;
      }
    }
    load_rows_paged_generic<kRows>(smem, head_base, offsets, rows_valid, d, aligned16, zero_src, tid);
  }

  // Out of line on purpose (see load_rows): other geometries and misaligned tensors.
  template <int kRows>
  __device__ __noinline__ static void load_rows_paged_generic(E* smem, const E* head_base, const int64_t* offsets,
                                                              int rows_valid, int d, bool aligned16, const E* zero_src,
                                                              int tid) {
    load<kRows>(
        smem, [&](int row) -> const E* { return row < rows_valid ? head_base + offsets[row] : nullptr; }, d, aligned16,
        zero_src, tid);
  }

  // Out of line on purpose (see load_rows).
  template <int kRows>
  __device__ __noinline__ static void load_rows_elementwise(E* smem, const E* tile_row0, int64_t row_stride,
                                                            int rows_valid, int d, int tid) {
    load<kRows>(
        smem, [=](int row) -> const E* { return row < rows_valid ? tile_row0 + row * row_stride : nullptr; }, d, false,
        tile_row0, tid);
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
