// Forward launch templates (grid shapes; shared memory opt-in for the tensor-core path).
#pragma once
#include "attn/cuda_check.h"
#include "fwd/fwd_mma.cuh"
#include "fwd/fwd_simt.cuh"
#include "launch/launchers.h"

namespace memeff {

template <typename T, int kBucket>
void run_fwd_simt(const FwdParams& p, cudaStream_t stream) {
  using Tr = SimtFwdTraits<kBucket>;
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_q, [&](const FwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_q, Tr::kBlockM), n, ceil_div(p.head_dim_v, kBucket));
    fwd_simt_kernel<T, Tr><<<grid, Tr::kThreads, 0, stream>>>(q);
    ATTN_LAUNCH_CHECK("memeff fwd_simt_kernel");
  });
}
template <typename T, int kBucket> const void* probe_fwd_simt() {
  return reinterpret_cast<const void*>(&fwd_simt_kernel<T, SimtFwdTraits<kBucket>>);
}

template <typename T, int kBucket>
void run_fwd_mma(const FwdParams& p, cudaStream_t stream) {
  using Tr = MmaFwdTraits<kBucket>;
  auto kernel = &fwd_mma_kernel<T, Tr>;
  if (Tr::kSmemBytes > 48 * 1024) {
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  }
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_q, [&](const FwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_q, Tr::kBlockM), n);
    kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(q);
    ATTN_LAUNCH_CHECK("memeff fwd_mma_kernel");
  });
}
template <typename T, int kBucket> const void* probe_fwd_mma() {
  return reinterpret_cast<const void*>(&fwd_mma_kernel<T, MmaFwdTraits<kBucket>>);
}

}  // namespace memeff
