// Split-KV merge kernel: one warp per row, the partials of 8 splits loaded at a time, the next 8 in flight.
#include "fwd/combine.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "attn/cuda_check.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/dependent_launch.h"

namespace attn::flash {

namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kMaxSplits = 128;
constexpr int kSplitsPerPass = 8;

// The logsumexp and O partials of kSplitsPerPass splits of one row, as one lane holds them.
template <int kBlocks>
struct SplitBatch {
  float lse[kSplitsPerPass];
  float4 o[kSplitsPerPass][kBlocks];
};

// One warp per row. Lane l holds columns 4l .. 4l + 3 of each 128-column block of the row (float4 loads of the
// partials, coalesced across the warp; kBlocks = 2 for head dims above 128). Splits are taken kSplitsPerPass at
// a time, each batch loaded while the one before it is folded into a running (max, sum, O) -- the key loop's
// online merge -- so the loads of every batch are in flight together: a decode step's combine is one round trip
// to the partials (L2-resident, written just before), not one per split.
template <typename E, int kBlocks>
__global__ void __launch_bounds__(kRowsPerBlock * 32) combine_kernel(const __grid_constant__ FwdParams p) {
  // Launched as a programmatic dependent of the forward (run_combine): wait for the forward grid to finish
  // and its partials to be visible; the next forward (itself a dependent launch) may be scheduled behind it.
  dependent_launch_prologue();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + warp;
  if (row >= p.accum_rows) return;
  const int splits = p.num_splits;

  auto load = [&](int s0, SplitBatch<kBlocks>& bt) {
#pragma unroll
    for (int k = 0; k < kSplitsPerPass; ++k) {
      const int s = s0 + k;
      bt.lse[k] = s < splits ? p.lse_accum[s * p.accum_rows + row] : -INFINITY;
      const float* src = p.oaccum + (s < splits ? s * p.accum_rows + row : row) * p.oaccum_stride + lane * 4;
#pragma unroll
      for (int v = 0; v < kBlocks; ++v)  // columns past head_dim (and past the row: oaccum_stride >= head_dim) unread
        bt.o[k][v] =
            s < splits && v * 128 + lane * 4 < p.head_dim ? *reinterpret_cast<const float4*>(src + v * 128) : float4{};
    }
  };
  float m = -INFINITY, l = 0.f;
  float acc[kBlocks][4] = {};
  SplitBatch<kBlocks> cur, next;
  load(0, cur);
#pragma unroll 1
  for (int s0 = 0; s0 < splits; s0 += kSplitsPerPass) {
    if (s0 + kSplitsPerPass < splits) load(s0 + kSplitsPerPass, next);
    float m_new = m;
#pragma unroll
    for (int k = 0; k < kSplitsPerPass; ++k) m_new = fmaxf(m_new, cur.lse[k]);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;  // no split saw a key yet: every weight 0
    const float corr = expf(m - m_use);
    l *= corr;
#pragma unroll
    for (int v = 0; v < kBlocks; ++v)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[v][e] *= corr;
#pragma unroll
    for (int k = 0; k < kSplitsPerPass; ++k) {
      const float w = expf(cur.lse[k] - m_use);  // 0 for splits past the end and splits that saw no key
      l += w;
#pragma unroll
      for (int v = 0; v < kBlocks; ++v) {
        acc[v][0] += w * cur.o[k][v].x;
        acc[v][1] += w * cur.o[k][v].y;
        acc[v][2] += w * cur.o[k][v].z;
        acc[v][3] += w * cur.o[k][v].w;
      }
    }
    m = m_new;
    cur = next;
  }
  const bool empty = l == 0.f;  // every split saw no key (NaN partials stay NaN)
  const float inv = empty ? 0.f : 1.f / l;
  if (lane == 0) p.lse[row] = empty ? -INFINITY : m + logf(l);

  // Row -> output address: dense rows are (b, h, i) of [B, Hq, Sq]; varlen rows are (h, t) of [Hq, totalQ].
  E* dst;
  if (p.cu_seqlens_q != nullptr) {
    const int64_t h = row / p.total_q, tok = row % p.total_q;
    dst = static_cast<E*>(p.o) + tok * p.o_row_stride + h * p.o_head_stride;
  } else {
    const int64_t i = row % p.seqlen_q, bh = row / p.seqlen_q;
    const int64_t h = bh % p.heads_q, b = bh / p.heads_q;
    dst = static_cast<E*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride + i * p.o_row_stride;
  }
  const bool aligned8 = (reinterpret_cast<uintptr_t>(dst) & 7) == 0;
#pragma unroll
  for (int v = 0; v < kBlocks; ++v) {
    const int c = v * 128 + lane * 4;
    if (c >= p.head_dim) continue;
    if (aligned8 && c + 4 <= p.head_dim) {
      uint2 packed;
      packed.x = pack2<E>(acc[v][0] * inv, acc[v][1] * inv);
      packed.y = pack2<E>(acc[v][2] * inv, acc[v][3] * inv);
      *reinterpret_cast<uint2*>(dst + c) = packed;
    } else {
      for (int e = 0; e < 4 && c + e < p.head_dim; ++e) dst[c + e] = from_float<E>(acc[v][e] * inv);
    }
  }
}

}  // namespace

void run_combine(const FwdParams& p, bool bf16, cudaStream_t stream, int device) {
  if (p.num_splits > kMaxSplits) throw std::runtime_error("flash-cuda: more than 128 KV splits");
  const dim3 grid(static_cast<unsigned>((p.accum_rows + kRowsPerBlock - 1) / kRowsPerBlock));
  const bool wide = p.head_dim > 128;
  if (bf16) {
    launch_dependent(wide ? combine_kernel<__nv_bfloat16, 2> : combine_kernel<__nv_bfloat16, 1>, grid,
                     kRowsPerBlock * 32, 0, stream, device, p);
  } else {
    launch_dependent(wide ? combine_kernel<__half, 2> : combine_kernel<__half, 1>, grid, kRowsPerBlock * 32, 0, stream,
                     device, p);
  }
  ATTN_LAUNCH_CHECK("flash_fwd_combine_kernel");
}

}  // namespace attn::flash
