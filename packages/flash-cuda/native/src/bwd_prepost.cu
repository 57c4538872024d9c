// Dsum = rowsum(dO * O) (one warp per query row, float32 accumulation) and the dQ workspace
// conversion. Both are memory-bound and tiny next to the main kernels: element-wise 2-byte loads
// that handle any strides and any D without an alignment path.
#include "bwd_prepost.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attn/cuda_check.h"
#include "ptx.h"

namespace attn::flash {
namespace {

// Query row r (of rows_total, in lse order) -> (b, h, i) and the row's element offsets.
struct RowOf {
  int b, h, i;
  __device__ __forceinline__ RowOf(const FwdParams& f, int64_t r, int64_t total_q) {
    if (f.cu_seqlens_q != nullptr) {
      h = static_cast<int>(r / total_q);
      const int tok = static_cast<int>(r % total_q);
      // the sequence b holding token tok (cu_seqlens is short: a linear scan)
      b = 0;
      while (b + 1 < f.batch && f.cu_seqlens_q[b + 1] <= tok) ++b;
      i = tok - f.cu_seqlens_q[b];
    } else {
      i = static_cast<int>(r % f.seqlen_q);
      h = static_cast<int>((r / f.seqlen_q) % f.heads_q);
      b = static_cast<int>(r / (int64_t(f.seqlen_q) * f.heads_q));
    }
  }
  __device__ __forceinline__ int64_t offset(const FwdParams& f, int64_t bs, int64_t hs, int64_t rs) const {
    return f.cu_seqlens_q != nullptr ? (int64_t(f.cu_seqlens_q[b]) + i) * rs + h * hs : b * bs + h * hs + i * rs;
  }
  __device__ __forceinline__ int64_t lse_index(const FwdParams& f) const {
    return f.cu_seqlens_q != nullptr ? h * f.lse_head_stride + f.cu_seqlens_q[b] + i
                                     : b * f.lse_batch_stride + h * f.lse_head_stride + i;
  }
};

int64_t rows_of(const BwdParams& p) {
  return p.f.cu_seqlens_q != nullptr ? int64_t(p.f.heads_q) * p.f.total_q
                                     : int64_t(p.f.batch) * p.f.heads_q * p.f.seqlen_q;
}

template <typename E>
__global__ void __launch_bounds__(256) bwd_dsum_kernel(const __grid_constant__ BwdParams p, int64_t rows) {
  const int64_t r = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const FwdParams& f = p.f;
  const RowOf row(f, r, f.total_q);
  const E* o = static_cast<const E*>(f.o) + row.offset(f, f.o_batch_stride, f.o_head_stride, f.o_row_stride);
  const E* dout = static_cast<const E*>(p.dout) + row.offset(f, p.do_batch_stride, p.do_head_stride, p.do_row_stride);
  float acc = 0.f;
  for (int d = lane; d < f.head_dim; d += 32) acc += MmaOp<E>::to_float(o[d]) * MmaOp<E>::to_float(dout[d]);
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
  if (lane == 0) p.dsum[row.lse_index(f)] = acc;
}

template <typename E>
__global__ void __launch_bounds__(256) bwd_convert_dq_kernel(const __grid_constant__ BwdParams p, int64_t rows) {
  const int64_t r = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const FwdParams& f = p.f;
  const RowOf row(f, r, f.total_q);
  const float* src = p.dq_accum + row.lse_index(f) * p.dq_accum_stride;
  E* dst = static_cast<E*>(p.dq) + row.offset(f, p.dq_batch_stride, p.dq_head_stride, p.dq_row_stride);
  for (int d = lane; d < f.head_dim; d += 32) dst[d] = MmaOp<E>::from_float(src[d] * p.scale);
}

unsigned blocks_for(int64_t rows) { return static_cast<unsigned>((rows + 7) / 8); }

}  // namespace

template <typename E>
void run_bwd_dsum(const BwdParams& p, cudaStream_t stream) {
  const int64_t rows = rows_of(p);
  if (rows == 0) return;
  bwd_dsum_kernel<E><<<blocks_for(rows), 256, 0, stream>>>(p, rows);
  ATTN_LAUNCH_CHECK("flash_bwd_dsum_kernel");
}

template <typename E>
void run_bwd_convert_dq(const BwdParams& p, cudaStream_t stream) {
  const int64_t rows = rows_of(p);
  if (rows == 0) return;
  bwd_convert_dq_kernel<E><<<blocks_for(rows), 256, 0, stream>>>(p, rows);
  ATTN_LAUNCH_CHECK("flash_bwd_convert_dq_kernel");
}

template void run_bwd_dsum<__half>(const BwdParams&, cudaStream_t);
template void run_bwd_dsum<__nv_bfloat16>(const BwdParams&, cudaStream_t);
template void run_bwd_convert_dq<__half>(const BwdParams&, cudaStream_t);
template void run_bwd_convert_dq<__nv_bfloat16>(const BwdParams&, cudaStream_t);

}  // namespace attn::flash
