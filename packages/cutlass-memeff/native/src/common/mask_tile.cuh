// A [kRows][kCols] tile of the bias / boolean mask staged in shared memory by cp.async, next to the
// K and V tiles, instead of one dependent global load per score element after Q.K^T (such loads sit on the critical
// path of every tile and use 16 bytes of each 32-byte sector).
//
// Usable when the mask's last dim is contiguous, its row stride is a multiple of 16 bytes (or 0:
// broadcast over queries), its (b, h) base is 16-byte aligned and its element is 1, 2 or 4 bytes;
// otherwise the kernels read the mask from global memory per element (masked_logit) as before.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/dtype_traits.cuh"
#include "common/toolkit.cuh"
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
// columns are zero-filled (their scores are removed by the bounds check in tile_logit, or are rows
// past seq_q that are never stored).
//
// One instantiation per element size, so the chunks per row are a compile-time power of two: a
// chunk's row and column are a shift and a mask (a division by a run-time chunk count costs ~20
// issues per chunk). The loop stays rolled and recomputes everything from idx on purpose:
// per-thread geometry hoisted out of it (a fixed column chunk per thread, tried first) stays live
// across the whole key loop and spilled fwd_mma (up to 264 bytes at d128, ptxas).
template <int kRows, int kCols, int kThreads, int kEsLog2>
__device__ __forceinline__ void load_mask_tile_es(unsigned char* tile, const MaskView& m, int i0, int j0, int seq_q,
                                                  int seq_k) {
  using Tile = MaskTile<kRows, kCols>;
  constexpr int kChunks = (kCols << kEsLog2) / 16;  // 16-byte chunks per row, a power of two
  constexpr int kPerChunk = 16 >> kEsLog2;          // elements per chunk
  static_assert(kChunks >= 1 && (kChunks & (kChunks - 1)) == 0, "mask tile columns: a power of two");
#pragma unroll 1
  for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kThreads) {
    const int r = idx / kChunks, c = idx % kChunks;
    const int i = i0 + r, j = j0 + c * kPerChunk;
    const int valid = i < seq_q ? min(max(seq_k - j, 0), kPerChunk) << kEsLog2 : 0;
    const unsigned char* src =
        static_cast<const unsigned char*>(m.base) + ((static_cast<int64_t>(i) * m.stride_i + j) << kEsLog2);
    cp_async_16(tile + r * Tile::kPitch + c * 16, valid > 0 ? src : static_cast<const unsigned char*>(m.base), valid);
  }
}

template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void load_mask_tile_async(unsigned char* tile, const MaskView& m, int i0, int j0, int seq_q,
                                                     int seq_k) {
  // mask_tile_ok: the element is 1, 2 or 4 bytes.
  if (m.dtype == kF32) {
    load_mask_tile_es<kRows, kCols, kThreads, 2>(tile, m, i0, j0, seq_q, seq_k);
  } else if (m.dtype == kBoolean) {
    load_mask_tile_es<kRows, kCols, kThreads, 0>(tile, m, i0, j0, seq_q, seq_k);
  } else {
    load_mask_tile_es<kRows, kCols, kThreads, 1>(tile, m, i0, j0, seq_q, seq_k);
  }
}

// masked_logit with the mask element read from the staged tile at (il, jl) = (i - i0, j - j0).
template <int kRows, int kCols, bool kFeat, bool kAccurate>
__device__ __forceinline__ float tile_logit(const FwdParams& p, const MaskView& m, const ScoreCtx& sc,
                                            const unsigned char* tile, int i, int j, int il, int jl, float dot,
                                            float& dcap) {
  dcap = 1.f;
  if (!sc.kb.visible(i, j)) return -INFINITY;
  const unsigned char* row = tile + il * MaskTile<kRows, kCols>::kPitch;
  if (m.dtype == kBoolean && row[jl] == 0) return -INFINITY;
  float s = kFeat ? modded_score<kAccurate>(p, sc, i, j, dot, dcap) : dot * p.scale;
  switch (m.dtype) {
    case kBoolean:
      return s;
    case kF16:
      return s + __half2float(reinterpret_cast<const __half*>(row)[jl]);
    case kBF16:
      return s + __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[jl]);
    default:
      return s + reinterpret_cast<const float*>(row)[jl];
  }
}
template <int kRows, int kCols, bool kFeat, bool kAccurate>
__device__ __forceinline__ float tile_logit(const FwdParams& p, const MaskView& m, const ScoreCtx& sc,
                                            const unsigned char* tile, int i, int j, int il, int jl, float dot) {
  float dcap;
  return tile_logit<kRows, kCols, kFeat, kAccurate>(p, m, sc, tile, i, j, il, jl, dot, dcap);
}

// The staged tile of an interior step (tile_keys_visible: every key in bounds and visible from
// every query of the block [i0, i0 + m), no softcap or ALiBi) needs no per-element rule: each score becomes
// dot * scale + mask term
// (fwd_mma d64 folds log2 e into the exp2's FFMA, sl2 = kLog2e; d128 and fwd_tf32 multiply by log2 e
// here, add_mask_rows' kLog2). A thread's two
// adjacent keys (jl even) come from one 32-bit (16-bit masks), 64-bit (fp32) or 16-bit (bool) shared
// load. tile_logit per element (bounds and causal compares, a run-time switch on the dtype and a
// 16-bit load per score) takes about 15 issues per score against 1 FFMA + 1.5 here.
template <bool kFeat>
__device__ __forceinline__ bool tile_keys_visible(const FwdParams& p, int i0, int m, int j0, int n) {
  if (kFeat && has_score_mods(p)) return false;
  if (j0 + n > p.seq_k) return false;
  if (p.has_right && j0 + n - 1 > i0 + p.right_offset) return false;
  if (kFeat && p.has_left && j0 < static_cast<int64_t>(i0) + m - 1 + p.left_offset) return false;
  return true;
}

// The mask terms of keys (jl, jl + 1) of one staged row: the bias values, or 0 / -inf (bool).
template <int kDt>
__device__ __forceinline__ float2 mask_pair(const unsigned char* row, int jl) {
  if constexpr (kDt == kBF16) {
    const uint32_t u = *reinterpret_cast<const uint32_t*>(row + 2 * jl);
    return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
  } else if constexpr (kDt == kF16) {
    return __half22float2(*reinterpret_cast<const __half2*>(row + 2 * jl));
  } else if constexpr (kDt == kF32) {
    return *reinterpret_cast<const float2*>(row + 4 * jl);
  } else {
    const uint32_t u = *reinterpret_cast<const uint16_t*>(row + jl);
    return make_float2((u & 0xffu) ? 0.f : -INFINITY, (u >> 8) ? 0.f : -INFINITY);
  }
}

// The mask term of one staged element (the backward's S^T pairs are two queries, two rows).
template <int kDt>
__device__ __forceinline__ float mask_one(const unsigned char* row, int jl) {
  if constexpr (kDt == kBF16) {
    return __uint_as_float(static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(row + 2 * jl)) << 16);
  } else if constexpr (kDt == kF16) {
    return __half2float(*reinterpret_cast<const __half*>(row + 2 * jl));
  } else if constexpr (kDt == kF32) {
    return *reinterpret_cast<const float*>(row + 4 * jl);
  } else {
    return row[jl] ? 0.f : -INFINITY;
  }
}

// acc (the accumulator layout of one 16-row tile: rows g and g + 8, keys n * 8 + 2t and + 1) =
// acc * scale + mask term (natural-log units), or with kLog2 (log2 units, for kernels that do not
// fold log2 e into the softmax) (acc * scale + mask term) * log2 e. row_g: the staged row of this
// thread's row g.
template <int kDt, int kPitch, bool kLog2, int NT>
__device__ __forceinline__ void add_mask_rows(float (&acc)[NT][4], const unsigned char* row_g, int t, float scale) {
#pragma unroll
  for (int n = 0; n < NT; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float2 m = mask_pair<kDt>(row_g + r * 8 * kPitch, n * 8 + 2 * t);
      const float f = kLog2 ? kLog2e : 1.f;
      acc[n][2 * r] = fmaf(acc[n][2 * r], scale, m.x) * f;
      acc[n][2 * r + 1] = fmaf(acc[n][2 * r + 1], scale, m.y) * f;
    }
}

// fn(std::integral_constant<int, dtype>) for the mask dtypes a tile can hold in a kernel for
// element type T: bool, fp32 and T itself (core's rule for additive masks, re-checked by
// dispatch.cu); the block-uniform switch sits outside the unrolled element loops. One variant fewer
// than every 16-bit dtype: the fp16 variant in the bf16 d128 kernel spilled on sm_80.
template <typename T, typename Fn>
__device__ __forceinline__ void with_mask_dtype(int32_t dtype, Fn&& fn) {
  if constexpr (ElemTraits<T>::kType == kF32) {
    if (dtype == kBoolean) {
      fn(std::integral_constant<int, kBoolean>{});
    } else {
      fn(std::integral_constant<int, kF32>{});
    }
  } else {
    switch (dtype) {
      case kBoolean:
        fn(std::integral_constant<int, kBoolean>{});
        break;
      case kF32:
        fn(std::integral_constant<int, kF32>{});
        break;
      default:
        fn(std::integral_constant<int, ElemTraits<T>::kType>{});
        break;
    }
  }
}

}  // namespace memeff
