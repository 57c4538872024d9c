// Split-KV merge kernel: one warp per row; the row's split weights go through shared memory.
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

template <typename E>
__global__ void __launch_bounds__(kRowsPerBlock * 32) combine_kernel(const __grid_constant__ FwdParams p) {
  __shared__ float weights[kRowsPerBlock][kMaxSplits];
  // Launched as a programmatic dependent of the forward (run_combine): wait for the forward grid to finish
  // and its partials to be visible; the next forward (itself a dependent launch) may be scheduled behind it.
  dependent_launch_prologue();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + warp;
  if (row >= p.accum_rows) return;
  const int splits = p.num_splits;

  float mx = -INFINITY;
  for (int s = lane; s < splits; s += 32) mx = fmaxf(mx, p.lse_accum[s * p.accum_rows + row]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
  if (mx != -INFINITY)
    for (int s = lane; s < splits; s += 32) sum += expf(p.lse_accum[s * p.accum_rows + row] - mx);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const bool empty = sum == 0.f;  // every split saw no key (NaN partials stay NaN)
  const float lse = empty ? -INFINITY : mx + logf(sum);
  for (int s = lane; s < splits; s += 32)
    weights[warp][s] = empty ? 0.f : expf(p.lse_accum[s * p.accum_rows + row] - lse);
  __syncwarp();
  if (lane == 0) p.lse[row] = lse;

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
  for (int d = lane; d < p.head_dim; d += 32) {
    float acc = 0.f;
    for (int s = 0; s < splits; ++s) acc += weights[warp][s] * p.oaccum[(s * p.accum_rows + row) * p.oaccum_stride + d];
    dst[d] = from_float<E>(acc);
  }
}

}  // namespace

void run_combine(const FwdParams& p, bool bf16, cudaStream_t stream, int device) {
  if (p.num_splits > kMaxSplits) throw std::runtime_error("flash-cuda: more than 128 KV splits");
  const dim3 grid(static_cast<unsigned>((p.accum_rows + kRowsPerBlock - 1) / kRowsPerBlock));
  if (bf16) {
    launch_dependent(combine_kernel<__nv_bfloat16>, grid, kRowsPerBlock * 32, 0, stream, device, p);
  } else {
    launch_dependent(combine_kernel<__half>, grid, kRowsPerBlock * 32, 0, stream, device, p);
  }
  ATTN_LAUNCH_CHECK("flash_fwd_combine_kernel");
}

}  // namespace attn::flash
