// The tensor-core backward's per-step bookkeeping without run-time division, per-element rules or 64-bit
// index math on the steps that need none. Each helper here replaces one piece of the general step
// (bwd_step.cuh) on the steps where it applies, with the same operations on the same values (dK/dV agree
// with the general path at rounding level: the order of some fp32 sums differs); the general path stays for
// every other step.
//
// Why (ncu, D128 S4k, bias [B,1,S,S] bf16): the general step with a bias executed ~1800 warp instructions
// per step against ~1100 without one; the difference was integer divisions of the step walk, a rolled
// mask-tile loader with per-chunk bounds and 64-bit addresses, the per-element P / dS rules inlined
// around every score (branches and cold code between the hot lines), and per-quad 64-bit dbias indices.
#pragma once
#include <cstdint>

#include "common/mask_tile.cuh"
#include "common/toolkit.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"

namespace memeff {

// The step walk (query head of the GQA group, query block) advanced by one step with a compare
// instead of s / per_head and s % per_head (or s / group, s % group with dbias_presum): the same
// sequence of steps as bwd_mma.cuh's step_head / step_row0.
struct StepWalk {
  int gh = 0;  // head within the group
  int r = 0;   // query block within this split's walk, before the stagger rotation
  __device__ __forceinline__ StepWalk next(bool presum, int group, int per_head) const {
    StepWalk w = *this;
    if (presum) {
      if (++w.gh == group) {
        w.gh = 0;
        ++w.r;
      }
    } else {
      if (++w.r == per_head) {
        w.r = 0;
        ++w.gh;
      }
    }
    return w;
  }
};

// Rows [i0, i0 + kRows) x keys [j0, j0 + kCols) of a staged mask when all of them are in bounds (the
// caller checks): no zero fill, so each thread copies fixed 16-byte chunks of rows r, r + kRowStep, ...
// from one 64-bit source advanced by a constant, instead of load_mask_tile_es's rolled loop that
// recomputes row, column, bounds and a 64-bit address per chunk. Same bytes into the same places.
template <int kRows, int kCols, int kThreads, int kEsLog2>
__device__ __forceinline__ void load_mask_tile_interior_es(unsigned char* tile, const MaskView& m, int i0, int j0) {
  using Tile = MaskTile<kRows, kCols>;
  constexpr int kChunks = (kCols << kEsLog2) / 16;
  constexpr int kPerChunk = 16 >> kEsLog2;
  static_assert(kThreads % kChunks == 0, "whole rows per pass");
  constexpr int kRowStep = kThreads / kChunks;
  static_assert(kRows % kRowStep == 0 || kRowStep % kRows == 0, "whole passes per tile");
  const int r = threadIdx.x / kChunks, c = threadIdx.x % kChunks;
  // More threads than chunks (a narrow tile, e.g. bool at 16 x 64 in bwd_tf32): one pass, the rest idle.
  if (kRowStep > kRows && r >= kRows) return;
  const unsigned char* src = static_cast<const unsigned char*>(m.base) +
                             ((static_cast<int64_t>(i0 + r) * m.stride_i + j0 + c * kPerChunk) << kEsLog2);
  const int64_t step = (static_cast<int64_t>(kRowStep) * m.stride_i) << kEsLog2;
  unsigned char* dst = tile + r * Tile::kPitch + c * 16;
#pragma unroll
  for (int it = 0; it < (kRows > kRowStep ? kRows / kRowStep : 1); ++it) {
    cp_async_16(dst + it * kRowStep * Tile::kPitch, src, 16);
    src += step;
  }
}

template <int kRows, int kCols, int kThreads>
__device__ __forceinline__ void load_mask_tile_interior(unsigned char* tile, const MaskView& m, int i0, int j0) {
  if (m.dtype == kF32) {
    load_mask_tile_interior_es<kRows, kCols, kThreads, 2>(tile, m, i0, j0);
  } else if (m.dtype == kBoolean) {
    load_mask_tile_interior_es<kRows, kCols, kThreads, 0>(tile, m, i0, j0);
  } else {
    load_mask_tile_interior_es<kRows, kCols, kThreads, 1>(tile, m, i0, j0);
  }
}

// The 16-bit mask terms of a warp's S^T fragment (keys warp*16 + g, + 8; queries n*8 + 2t, + 1 of
// query tiles n = 0..QT-1) with ldmatrix.trans: the staged tile is [queries][keys], so an 8 x 8 block
// of it transposed gives each lane (key g, queries 2t and 2t + 1) in one register, exactly the pairs
// e = 2kh, 2kh + 1 of acc[n]. QT / 2 ldmatrix.x4 instead of 4 * QT 16-bit loads. Rows are 16-byte
// aligned (kPitch is a multiple of 16) and 8 rows of one block start 4 banks apart: conflict-free.
// out[n][e]: the raw 16-bit pair registers, unpacked by the caller per dtype.
template <int kPitch, int QT>
__device__ __forceinline__ void load_mask_frag16(uint32_t (&out)[QT][2], const unsigned char* tile, int warp,
                                                 int lane) {
  static_assert(QT % 2 == 0, "query tiles in pairs");
  const int mat = lane / 8, r = lane % 8;
#pragma unroll
  for (int x = 0; x < QT / 2; ++x) {
    // Matrix mat of this ldmatrix: query tile n = 2x + mat / 2, key half kh = mat % 2.
    const int n = 2 * x + mat / 2, kh = mat % 2;
    uint32_t v[4];
    ldmatrix_x4_trans(v, tile + (n * 8 + r) * kPitch + 2 * (warp * 16 + 8 * kh));
    out[2 * x][0] = v[0];
    out[2 * x][1] = v[1];
    out[2 * x + 1][0] = v[2];
    out[2 * x + 1][1] = v[3];
  }
}

// The low (lower query) and high halves of a 16-bit pair as floats.
template <int kDt>
__device__ __forceinline__ float2 unpack_mask16(uint32_t u) {
  if constexpr (kDt == kBF16) {
    return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(&u));
  }
}

}  // namespace memeff
