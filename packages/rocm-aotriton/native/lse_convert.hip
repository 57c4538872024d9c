// The one kernel of the AOTriton binding: log-sum-exp layout and fully-masked-row conversion.
#include "lse_convert.h"

#include <cmath>

namespace attn_aot {
namespace {

__global__ void lse_convert_kernel(LseConvert c) {
  const int64_t n = int64_t(c.sequences) * c.heads_q * c.max_seqlen_q;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx % c.max_seqlen_q;
    const int64_t h = (idx / c.max_seqlen_q) % c.heads_q;
    const int64_t s = idx / (int64_t(c.max_seqlen_q) * c.heads_q);
    int64_t attn_idx = idx;  // dense: the layouts agree
    if (c.cu_seqlens_q != nullptr) {
      const int64_t start = c.cu_seqlens_q[s];
      const int64_t len = c.cu_seqlens_q[s + 1] - start;
      if (i >= len) {
        if (!c.to_attn) c.aot[idx] = INFINITY;  // padding rows: nothing attends
        continue;
      }
      attn_idx = h * c.total_q + start + i;
    }
    if (c.to_attn) {
      const float v = c.aot[idx];
      c.attn[attn_idx] = (v == INFINITY || v <= c.fully_masked_below) ? -INFINITY : v;
    } else {
      const float v = c.attn[attn_idx];
      c.aot[idx] = v == -INFINITY ? INFINITY : v;
    }
  }
}

}  // namespace

hipError_t launch_lse_convert(const LseConvert& c, hipStream_t stream) {
  const int64_t n = int64_t(c.sequences) * c.heads_q * c.max_seqlen_q;
  if (n == 0) return hipSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  hipLaunchKernelGGL(lse_convert_kernel, dim3(grid), dim3(kThreads), 0, stream, c);
  return hipGetLastError();
}

}  // namespace attn_aot
