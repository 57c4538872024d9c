// Launch template: one per kernel traits, instantiated by the generated files generated/fwd_*.cu.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "common/dependent_launch.h"
#include "fwd/flash_fwd_kernel.h"
#include "common/fwd_params.h"
#include "launch/smem_opt_in.h"

namespace attn::flash {

template <typename Tr>
void run_fwd(const FwdParams& p, cudaStream_t stream, int device) {
  constexpr int kSmem = Tr::kPagedSmemBytes;  // the opt-in covers paged calls; others launch with less
  static std::atomic<uint64_t> opted_in{0};
  opt_in_smem(flash_fwd_kernel<Tr>, kSmem, opted_in, device, true);  // two CTAs of 64-80 KB per SM
  const dim3 grid(static_cast<unsigned>(p.m_blocks * p.num_splits),
                  static_cast<unsigned>(p.pack_gqa ? p.heads_k : p.heads_q), static_cast<unsigned>(p.batch));
  const int smem = p.block_table != nullptr ? Tr::kPagedSmemBytes : Tr::kSmemBytes;
  launch_dependent(flash_fwd_kernel<Tr>, grid, Tr::kNThreads, smem, stream, device, p);
  ATTN_LAUNCH_CHECK("flash_fwd_kernel");
}

}  // namespace attn::flash
