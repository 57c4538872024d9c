// Launch template: one per kernel traits, instantiated by the generated files generated/fwd_*.cu.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "common/dependent_launch.h"
#include "fwd/flash_fwd_kernel.h"
#include "common/fwd_params.h"

namespace attn::flash {

template <typename Tr>
void run_fwd(const FwdParams& p, cudaStream_t stream, int device) {
  constexpr int kSmem = Tr::kPagedSmemBytes;  // the opt-in covers paged calls; others launch with less
  // Opting into > 48 KB of dynamic shared memory and the carveout are per device; remember them (devices 0..63).
  static std::atomic<uint64_t> opted_in{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(opted_in.load(std::memory_order_relaxed) & bit)) {
    if (kSmem > 48 * 1024) {
      ATTN_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    }
    // Ask for the largest shared-memory carveout, so that as many CTAs as the registers allow (two of 64-80 KB)
    // are resident per SM (the default is only a hint to the driver; the K/V loads are cp.async.cg, which
    // bypass L1, so the smaller L1 costs nothing here).
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_kernel<Tr>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
    opted_in.fetch_or(bit, std::memory_order_relaxed);
  }
  const dim3 grid(static_cast<unsigned>(p.m_blocks * p.num_splits),
                  static_cast<unsigned>(p.pack_gqa ? p.heads_k : p.heads_q), static_cast<unsigned>(p.batch));
  const int smem = p.block_table != nullptr ? Tr::kPagedSmemBytes : Tr::kSmemBytes;
  launch_dependent(flash_fwd_kernel<Tr>, grid, Tr::kNThreads, smem, stream, device, p);
  ATTN_LAUNCH_CHECK("flash_fwd_kernel");
}

}  // namespace attn::flash
