// cuda-math forward: one block per query row (a block-stride loop over rows), cpu-math's exact
// two-pass softmax. Pass 1 finds the row's largest score; pass 2 sums exp(s - max) and accumulates
// the weighted values, every key of [lo, hi) included (a zero weight times an infinite value is NaN,
// as in cpu-math). Scores: one warp per key, lanes over the head dim; values: threads over Dv, each
// owning kPerThread output columns in registers.
#include "attn/cuda_check.h"
#include "errors.h"
#include "math_device.cuh"
#include "math_kernels.h"

namespace attn::math {
namespace {

template <typename T, typename Acc>
__global__ void __launch_bounds__(kThreads) forward_kernel(const Params p) {
  extern __shared__ __align__(16) unsigned char smem[];
  Acc* q_s = reinterpret_cast<Acc*>(smem);  // [D]
  Acc* s_s = q_s + p.head_dim;              // [kKeyTile] scores, then exp(s - max)
  Acc* w_s = s_s + kKeyTile;                // [kKeyTile] weights: exp(s - max), 0 where dropped
  const int tid = threadIdx.x;
  const int D = p.head_dim, Dv = p.head_dim_v;

  for (int64_t r = block_start(); r < p.rows; r += block_stride()) {
    const RowPos w = row_of(p, r);
    const Visible vis = visible_of(p, w.i, w.sq, w.sk);
    const int64_t hk = w.h / p.group;
    __syncthreads();  // the previous row is done with q_s
    const T* q_row = at<T>(p.q, w.b, w.h, w.q_row);
    for (int c = tid; c < D; c += kThreads) q_s[c] = Io<T>::template load<Acc>(q_row + c * p.q.sc);
    __syncthreads();

    const Acc m = row_max<T, Acc>(p, w, vis, q_s, s_s);
    Acc acc[kPerThread];
#pragma unroll
    for (int x = 0; x < kPerThread; ++x) acc[x] = 0;
    Acc l = 0;
    // m == -inf: no key, or all masked: out 0, logsumexp -inf. NaN continues (NaN in, NaN out).
    if (m != neg_inf<Acc>()) {
      for (int64_t j0 = vis.lo; j0 < vis.hi; j0 += kKeyTile) {
        const int n = static_cast<int>(min(int64_t{kKeyTile}, vis.hi - j0));
        tile_scores<T, Acc>(p, w, vis, j0, n, q_s, s_s, nullptr);
        for (int kk = tid; kk < n; kk += kThreads) {
          const Acc e = exp_of(s_s[kk] - m);
          s_s[kk] = e;
          w_s[kk] = keep_factor<Acc>(p, w.b, w.h, w.i, j0 + kk) != Acc(0) ? e : Acc(0);
        }
        __syncthreads();
        for (int kk = 0; kk < n; ++kk) l += s_s[kk];  // every thread, same order: the same sum
#pragma unroll
        for (int x = 0; x < kPerThread; ++x) {
          const int c = tid + x * kThreads;
          if (c < Dv) {
            Acc a = acc[x];
            for (int kk = 0; kk < n; ++kk) {
              const T* v_row = key_row<T>(p, p.v, w.b, hk, w.k_row0, j0 + kk);
              a += w_s[kk] * Io<T>::template load<Acc>(v_row + c * p.v.sc);
            }
            acc[x] = a;
          }
        }
        __syncthreads();  // s_s and w_s are rewritten by the next tile
      }
    }
    const bool none = m == neg_inf<Acc>();
    // cpu-math scales the probabilities by keepScale / sum; the same factor, applied once per column.
    const Acc inv = none ? Acc(0) : static_cast<Acc>(p.keep_scale) / l;
    T* o_row = at_mut<T>(p.out, w.b, w.h, w.q_row);
#pragma unroll
    for (int x = 0; x < kPerThread; ++x) {
      const int c = tid + x * kThreads;
      if (c < Dv) Io<T>::store(o_row + c * p.out.sc, acc[x] * inv);
    }
    if (tid == 0) p.lse[r] = none ? -INFINITY : static_cast<float>(m + log_of(l));
  }
}

template <typename T, typename Acc>
void launch(const Params& p, gpuStream_t stream) {
  const size_t smem = (static_cast<size_t>(p.head_dim) + 2 * kKeyTile) * sizeof(Acc);
  const unsigned blocks = static_cast<unsigned>(p.rows < kMaxBlocks ? p.rows : kMaxBlocks);
  forward_kernel<T, Acc><<<blocks, kThreads, smem, stream>>>(p);
  ATTN_LAUNCH_CHECK("cuda-math forward_kernel");
}

}  // namespace

std::string run_forward(const Params& p, DType dtype, bool acc64, gpuStream_t stream) {
  if (p.rows == 0) return "";
  switch (dtype) {
    case DType::kFloat64:
      launch<double, double>(p, stream);
      return "forward_f64_acc64";
    case DType::kFloat32:
      if (acc64) {
        launch<float, double>(p, stream);
        return "forward_f32_acc64";
      }
      launch<float, float>(p, stream);
      return "forward_f32_acc32";
    case DType::kFloat16:
      if (acc64) {
        launch<__half, double>(p, stream);
        return "forward_f16_acc64";
      }
      launch<__half, float>(p, stream);
      return "forward_f16_acc32";
    case DType::kBFloat16:
      if (acc64) {
        launch<__nv_bfloat16, double>(p, stream);
        return "forward_bf16_acc64";
      }
      launch<__nv_bfloat16, float>(p, stream);
      return "forward_bf16_acc32";
    default:
      throw InvalidArgument("cuda-math: the forward takes float64, float32, float16 or bfloat16", "ATTN_BAD_ARGUMENT");
  }
}

const void* forward_probe() { return reinterpret_cast<const void*>(&forward_kernel<float, float>); }

}  // namespace attn::math
