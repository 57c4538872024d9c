// Launch template of the decode kernel: one per DecodeTraits, instantiated by the generated files
// generated/fwd_decode_*.cu.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "fwd/flash_fwd_decode_kernel.h"
#include "launch/smem_opt_in.h"

namespace attn::flash {

template <typename Tr>
void run_fwd_decode(const FwdParams& p, cudaStream_t stream, int device) {
  static std::atomic<uint64_t> opted_in{0};
  opt_in_smem(flash_fwd_decode_kernel<Tr>, Tr::kSmemBytes, opted_in, device, true);  // two CTAs per SM at D 128
  const dim3 grid(static_cast<unsigned>(p.m_blocks * p.num_splits),
                  static_cast<unsigned>(p.pack_gqa ? p.heads_k : p.heads_q), static_cast<unsigned>(p.batch));
  // Split-KV merged in a cluster: the splits of one row tile are consecutive along x (blockIdx.x = m_block *
  // num_splits + split), so each cluster of num_splits CTAs is one row tile's splits and its rank the split.
  const unsigned cluster_x = p.cluster_splits ? static_cast<unsigned>(p.num_splits) : 1u;
  launch_dependent_clustered(flash_fwd_decode_kernel<Tr>, grid, cluster_x, Tr::kNThreads, Tr::kSmemBytes, stream,
                             device, p);
  ATTN_LAUNCH_CHECK("flash_fwd_decode_kernel");
}

}  // namespace attn::flash
