// Dsum = rowsum(dO * O) (float32 accumulation), with the dQ workspace zeroed in the same pass, and the
// workspace's conversion to dQ after the main kernels. Both are memory-bound: every byte of O, dO, the
// workspace and dQ moves once. When the tensors are 16-byte aligned (the common case) a group of lanes
// shares a row and each lane moves 16-byte chunks; otherwise one warp per row with element-wise loads
// that handle any strides and any D.
#include "bwd/bwd_prepost.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attn/cuda_check.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/seq_extents.h"

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

// Lanes per row on the vector path: the row's 16-byte chunks rounded up to a power of two (D <= 256: at most
// 32, one warp).
__host__ __device__ __forceinline__ int lanes_per_row(int head_dim) {
  int g = 1;
  while (g * 8 < head_dim) g *= 2;
  return g;
}

// Unpacks two 16-bit floats of a 32-bit word.
template <typename E>
__device__ __forceinline__ float2 unpack2(uint32_t w);
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(uint32_t w) {
  return __half22float2(*reinterpret_cast<const __half2*>(&w));
}

// Zeroes the dQ workspace row of `lane` of `lanes` (the default mode accumulates into it with atomics).
__device__ __forceinline__ void zero_dq_row(const BwdParams& p, int64_t lse_index, int lane, int lanes) {
  float4* row = reinterpret_cast<float4*>(p.dq_accum + lse_index * p.dq_accum_stride);
  for (int c = lane; c < p.dq_accum_stride / 4; c += lanes) row[c] = make_float4(0.f, 0.f, 0.f, 0.f);
}

template <typename E>
__global__ void __launch_bounds__(256) bwd_dsum_kernel(const __grid_constant__ BwdParams p, int64_t rows) {
  const FwdParams& f = p.f;
  const bool zero_dq = p.dq_accum != nullptr;
  if (f.aligned16) {
    const int lanes = lanes_per_row(f.head_dim), lane = threadIdx.x & (lanes - 1);
    const int64_t r = int64_t(blockIdx.x) * (256 / lanes) + threadIdx.x / lanes;
    // Every lane of a group stays to the end: the shuffles below span the whole warp.
    const bool live = r < rows;
    const RowOf row(f, live ? r : 0, f.total_q);
    float acc = 0.f;
    if (live && lane * 8 < f.head_dim) {
      const uint4 o = *reinterpret_cast<const uint4*>(
          static_cast<const E*>(f.o) + row.offset(f, f.o_batch_stride, f.o_head_stride, f.o_row_stride) + lane * 8);
      const uint4 d = *reinterpret_cast<const uint4*>(
          static_cast<const E*>(p.dout) + row.offset(f, p.do_batch_stride, p.do_head_stride, p.do_row_stride) +
          lane * 8);
      const uint32_t ow[4] = {o.x, o.y, o.z, o.w}, dw[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const float2 a = unpack2<E>(ow[w]), b = unpack2<E>(dw[w]);
        acc += a.x * b.x + a.y * b.y;
      }
    }
    for (int s = lanes / 2; s > 0; s >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
    if (!live) return;
    const int64_t li = row.lse_index(f);
    if (lane == 0) p.dsum[li] = acc;
    if (zero_dq) zero_dq_row(p, li, lane, lanes);
    return;
  }
  const int64_t r = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const RowOf row(f, r, f.total_q);
  const E* o = static_cast<const E*>(f.o) + row.offset(f, f.o_batch_stride, f.o_head_stride, f.o_row_stride);
  const E* dout = static_cast<const E*>(p.dout) + row.offset(f, p.do_batch_stride, p.do_head_stride, p.do_row_stride);
  float acc = 0.f;
  for (int d = lane; d < f.head_dim; d += 32) acc += to_float(o[d]) * to_float(dout[d]);
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, s);
  const int64_t li = row.lse_index(f);
  if (lane == 0) p.dsum[li] = acc;
  if (zero_dq) zero_dq_row(p, li, lane, 32);
}

template <typename E>
__global__ void __launch_bounds__(256) bwd_convert_dq_kernel(const __grid_constant__ BwdParams p, int64_t rows) {
  const FwdParams& f = p.f;
  if (f.aligned16) {
    const int lanes = lanes_per_row(f.head_dim), lane = threadIdx.x & (lanes - 1);
    const int64_t r = int64_t(blockIdx.x) * (256 / lanes) + threadIdx.x / lanes;
    if (r >= rows || lane * 8 >= f.head_dim) return;
    const RowOf row(f, r, f.total_q);
    const float4* src = reinterpret_cast<const float4*>(p.dq_accum + row.lse_index(f) * p.dq_accum_stride) + lane * 2;
    const float4 a = src[0], b = src[1];
    uint4 out;
    out.x = pack2<E>(a.x * p.scale, a.y * p.scale);
    out.y = pack2<E>(a.z * p.scale, a.w * p.scale);
    out.z = pack2<E>(b.x * p.scale, b.y * p.scale);
    out.w = pack2<E>(b.z * p.scale, b.w * p.scale);
    *reinterpret_cast<uint4*>(static_cast<E*>(p.dq) +
                              row.offset(f, p.dq_batch_stride, p.dq_head_stride, p.dq_row_stride) + lane * 8) = out;
    return;
  }
  const int64_t r = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (r >= rows) return;
  const RowOf row(f, r, f.total_q);
  const float* src = p.dq_accum + row.lse_index(f) * p.dq_accum_stride;
  E* dst = static_cast<E*>(p.dq) + row.offset(f, p.dq_batch_stride, p.dq_head_stride, p.dq_row_stride);
  for (int d = lane; d < f.head_dim; d += 32) dst[d] = from_float<E>(src[d] * p.scale);
}

// One warp per key row j of (b, hk) (grid: key rows / 8, Hk, B): rows the batch holds past seqused_k[b]
// get dK = dV = 0. Element-wise stores: any strides, any D; these rows are few bytes of the call.
template <typename E>
__global__ void __launch_bounds__(256) bwd_zero_unused_keys_kernel(const __grid_constant__ BwdParams p) {
  const FwdParams& f = p.f;
  const int j = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  const int hk = blockIdx.y, b = blockIdx.z;
  const bool varlen = f.cu_seqlens_k != nullptr;
  // The batch row's keys, clamped into dK/dV (seq_extents.h, the replay rule).
  const int64_t k0 = varlen ? clamp64(f.cu_seqlens_k[b], 0, f.total_k) : 0;
  const int64_t keys = varlen ? clamp64(f.cu_seqlens_k[b + 1], k0, f.total_k) - k0 : f.seqlen_k;
  if (j < f.seqused_k[b] || j >= keys) return;
  const int64_t row = k0 + j;
  E* dk = static_cast<E*>(p.dk) + (varlen ? 0 : b * p.dk_batch_stride) + hk * p.dk_head_stride + row * p.dk_row_stride;
  E* dv = static_cast<E*>(p.dv) + (varlen ? 0 : b * p.dv_batch_stride) + hk * p.dv_head_stride + row * p.dv_row_stride;
  const E zero = from_float<E>(0.f);
  for (int d = lane; d < f.head_dim; d += 32) {
    dk[d] = zero;
    dv[d] = zero;
  }
}

// Rows per 256-thread block: a group of lanes per row on the vector path, a warp per row otherwise.
unsigned blocks_for(const BwdParams& p, int64_t rows) {
  const int per_block = p.f.aligned16 ? 256 / lanes_per_row(p.f.head_dim) : 8;
  return static_cast<unsigned>((rows + per_block - 1) / per_block);
}

}  // namespace

template <typename E>
void run_bwd_dsum(const BwdParams& p, cudaStream_t stream) {
  const int64_t rows = rows_of(p);
  if (rows == 0) return;
  bwd_dsum_kernel<E><<<blocks_for(p, rows), 256, 0, stream>>>(p, rows);
  ATTN_LAUNCH_CHECK("flash_bwd_dsum_kernel");
}

template <typename E>
void run_bwd_convert_dq(const BwdParams& p, cudaStream_t stream) {
  const int64_t rows = rows_of(p);
  if (rows == 0) return;
  bwd_convert_dq_kernel<E><<<blocks_for(p, rows), 256, 0, stream>>>(p, rows);
  ATTN_LAUNCH_CHECK("flash_bwd_convert_dq_kernel");
}

template <typename E>
void run_bwd_zero_unused_keys(const BwdParams& p, cudaStream_t stream) {
  if (p.f.seqused_k == nullptr || p.f.seqlen_k == 0) return;
  const dim3 grid(static_cast<unsigned>((int64_t(p.f.seqlen_k) + 7) / 8), static_cast<unsigned>(p.f.heads_k),
                  static_cast<unsigned>(p.f.batch));
  bwd_zero_unused_keys_kernel<E><<<grid, 256, 0, stream>>>(p);
  ATTN_LAUNCH_CHECK("flash_bwd_zero_unused_keys_kernel");
}

template void run_bwd_dsum<__half>(const BwdParams&, cudaStream_t);
template void run_bwd_dsum<__nv_bfloat16>(const BwdParams&, cudaStream_t);
template void run_bwd_convert_dq<__half>(const BwdParams&, cudaStream_t);
template void run_bwd_convert_dq<__nv_bfloat16>(const BwdParams&, cudaStream_t);
template void run_bwd_zero_unused_keys<__half>(const BwdParams&, cudaStream_t);
template void run_bwd_zero_unused_keys<__nv_bfloat16>(const BwdParams&, cudaStream_t);

}  // namespace attn::flash
