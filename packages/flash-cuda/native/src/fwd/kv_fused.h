// The two pieces of sdpaKvCache's append and rotary that flash_fwd_kernel.h runs itself where the plan
// fuses them (dispatch.cu, fuse_kv_append): the appended keys of one split written into the cache, and
// the query tile rotated as it is loaded. Both compute with attn/rotary.cuh, as the separate append kernel
// (attn/kv_append.cuh) does, so a fused call leaves the same cache bits and attends over the same q bits.
// Out of line: they run once per CTA before the key loop, and their temporaries must not count against
// the loop's registers. Each pass is straight-line code (addresses clamped into the rows, results selected)
// so that all its loads are in flight together: one memory round trip per pass, not one per element.
#pragma once
#include <cstdint>

#include "attn/rotary.cuh"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "common/seq_extents.h"

namespace attn::flash {

// The rotary tables as one pass reads them.
template <typename E>
struct RotaryTables {
  const E* cos;
  const E* sin;
  int64_t cos_row, cos_col, sin_row, sin_col;
  int64_t rows, half;
  bool interleaved;

  __device__ __forceinline__ explicit RotaryTables(const FwdParams& p)
      : cos(static_cast<const E*>(p.rot_cos)),
        sin(static_cast<const E*>(p.rot_sin)),
        cos_row(p.rot_cos_stride[0]),
        cos_col(p.rot_cos_stride[1]),
        sin_row(p.rot_sin_stride[0]),
        sin_col(p.rot_sin_stride[1]),
        rows(p.rot_rows),
        half(p.rot_half),
        interleaved(p.rot_interleaved) {}

  // Column c of row x (element stride xs) rotated at position pos (clamped into the tables, as the append
  // kernel does).
  __device__ __forceinline__ E column(const E* x, int64_t xs, int64_t c, int64_t pos) const {
    const int64_t r = clamp64(pos, 0, rows - 1);
    return kv::rotary_column<E>(x, xs, c, cos + r * cos_row, cos_col, sin + r * sin_row, sin_col, half, interleaved);
  }
};

// Writes the appended keys with key index j in [j_lo, j_hi) of batch row b, KV head hk into the cache
// (SeqExtents' k_pos0, kv_old and kv_row): kNew row i = k_pos0 + j - kv_old rotated at its position
// k_pos0 + j, vNew row i as is. Every thread of the CTA takes kUnroll elements of a pass, all loads of a
// pass before its stores (kNew and the cache may alias as far as the compiler knows). The caller orders
// these stores before its own loads of the rows (a barrier).
template <typename Tr, bool kRotate, bool kPaged>
__device__ __forceinline__ void kv_append_pass(const FwdParams& p, int b, int hk, int k_pos0, int kv_old, int kv_row,
                                               int j_lo, int j_hi, int tid) {
  using E = typename Tr::Element;
  constexpr int kUnroll = 4;
  const int d = p.head_dim;
  const int elems = (j_hi - j_lo) * d;  // at most kMaxFusedAppend (dispatch.cu) rows of D <= 256
  const RotaryTables<E> rot(p);
  const int64_t kn_row = p.kv_kn_stride[1], kn_col = p.kv_kn_stride[3];
  const int64_t vn_row = p.kv_vn_stride[1], vn_col = p.kv_vn_stride[3];
  const E* kn = static_cast<const E*>(p.kv_k_new) + b * p.kv_kn_stride[0] + hk * p.kv_kn_stride[2];
  const E* vn = static_cast<const E*>(p.kv_v_new) + b * p.kv_vn_stride[0] + hk * p.kv_vn_stride[2];
  E* kc = static_cast<E*>(const_cast<void*>(p.k)) + hk * p.k_head_stride;
  E* vc = static_cast<E*>(const_cast<void*>(p.v)) + hk * p.v_head_stride;
  const int* table = kPaged ? p.block_table + int64_t(b) * p.max_pages_per_seq : nullptr;
  const int last_page = p.num_pages - 1;
#pragma unroll 1
  for (int base = 0; base < elems; base += kUnroll * Tr::kNThreads) {
    E kval[kUnroll], vval[kUnroll];
    int64_t koff[kUnroll], voff[kUnroll];
    bool ok[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int idx0 = base + u * Tr::kNThreads + tid;
      ok[u] = idx0 < elems;
      const int idx = ok[u] ? idx0 : 0;  // past the end: element 0 again, loaded and not stored
      const int j = j_lo + idx / d, c = idx % d;
      const int pos = k_pos0 + j;  // table position of key j (< 2^31: the kvCacheCapacity rule)
      const int i = pos - kv_old;  // its row of kNew / vNew
      int64_t row_k, row_v;
      if constexpr (kPaged) {
        const int page = pos / p.page_size, in_page = pos - page * p.page_size;
        int blk = table[page];
        blk = blk < 0 ? 0 : (blk > last_page ? last_page : blk);
        row_k = blk * p.k_page_stride + int64_t(in_page) * p.k_row_stride;
        row_v = blk * p.v_page_stride + int64_t(in_page) * p.v_row_stride;
      } else {
        row_k = int64_t(kv_row) * p.k_page_stride + int64_t(pos) * p.k_row_stride;
        row_v = int64_t(kv_row) * p.v_page_stride + int64_t(pos) * p.v_row_stride;
      }
      koff[u] = row_k + c;
      voff[u] = row_v + c;
      const E* krow = kn + i * kn_row;
      kval[u] = kRotate ? rot.column(krow, kn_col, c, pos) : krow[c * kn_col];
      vval[u] = vn[i * vn_row + c * vn_col];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!ok[u]) continue;
      kc[koff[u]] = kval[u];
      vc[voff[u]] = vval[u];
    }
  }
}

template <typename Tr>
__device__ __noinline__ void kv_append_rows(const FwdParams& p, int b, int hk, int k_pos0, int kv_old, int kv_row,
                                            int j_lo, int j_hi, int tid) {
  const bool rotate = p.rot_cos != nullptr, paged = p.block_table != nullptr;
  if (rotate && paged) kv_append_pass<Tr, true, true>(p, b, hk, k_pos0, kv_old, kv_row, j_lo, j_hi, tid);
  if (rotate && !paged) kv_append_pass<Tr, true, false>(p, b, hk, k_pos0, kv_old, kv_row, j_lo, j_hi, tid);
  if (!rotate && paged) kv_append_pass<Tr, false, true>(p, b, hk, k_pos0, kv_old, kv_row, j_lo, j_hi, tid);
  if (!rotate && !paged) kv_append_pass<Tr, false, false>(p, b, hk, k_pos0, kv_old, kv_row, j_lo, j_hi, tid);
}

// The Q tile of a CTA (kBlockM rows from row0; rows past rows_total and columns past d zero) rotated as it
// is loaded, into the swizzled layout the cp.async load gives. Packed row r is query i = r / group, head
// h0 + r % group with GQA packing (group 1 without: head h0), at q_bh + h * q_head_stride + i * q_row_stride,
// rotated at position kv_old (+ i where rot_q_per_row). One 16-byte chunk (8 columns) per pass. The
// caller's barrier makes the tile visible.
template <typename Tr>
__device__ __noinline__ void load_q_rotated(typename Tr::Element* sQ, const FwdParams& p,
                                            const typename Tr::Element* q_bh, int group, int h0, int kv_old, int row0,
                                            int rows_total, int tid) {
  using E = typename Tr::Element;
  static_assert(sizeof(E) == 2, "16-bit elements");
  constexpr int kRows = Tr::kBlockM;
  constexpr int kChunks = kRows * Tr::kChunksPerRow;
  const int d = p.head_dim;
  const RotaryTables<E> rot(p);
  const bool per_row = p.rot_q_per_row;
  const int64_t head_stride = p.q_head_stride, row_stride = p.q_row_stride;
  // Rows past rows_total come last: the passes that hold none are zero stores only.
#pragma unroll 1
  for (int idx = tid; idx < kChunks; idx += Tr::kNThreads) {
    const int row = idx / Tr::kChunksPerRow, chunk = idx % Tr::kChunksPerRow;
    const int r = row0 + row;
    uint16_t bits[8] = {};
    if (r < rows_total) {
      const int i = r / group, h = h0 + r % group;
      const E* x = q_bh + h * head_stride + i * row_stride;
      const int64_t pos = int64_t(kv_old) + (per_row ? i : 0);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int c = chunk * 8 + e;
        const E y = rot.column(x, 1, c < d ? c : d - 1, pos);  // columns past d read the last one, store zero
        bits[e] = c < d ? *reinterpret_cast<const uint16_t*>(&y) : uint16_t(0);
      }
    }
    uint4 packed;
    packed.x = bits[0] | (uint32_t(bits[1]) << 16);
    packed.y = bits[2] | (uint32_t(bits[3]) << 16);
    packed.z = bits[4] | (uint32_t(bits[5]) << 16);
    packed.w = bits[6] | (uint32_t(bits[7]) << 16);
    *reinterpret_cast<uint4*>(sQ + swizzle_offset<Tr>(row, chunk, kRows)) = packed;
  }
}

}  // namespace attn::flash
