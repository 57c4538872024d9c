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

namespace attn::flash {

template <typename Tr>
void run_fwd_decode(const FwdParams& p, cudaStream_t stream, int device) {
  // The opt-in above 48 KB and the largest carveout (two CTAs per SM at D 128), once per device (0..63).
  static std::atomic<uint64_t> opted_in{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(opted_in.load(std::memory_order_relaxed) & bit)) {
    if (Tr::kSmemBytes > 48 * 1024) {
      ATTN_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_decode_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           Tr::kSmemBytes));
    }
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_decode_kernel<Tr>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
    opted_in.fetch_or(bit, std::memory_order_relaxed);
  }
  const dim3 grid(static_cast<unsigned>(p.m_blocks * p.num_splits),
                  static_cast<unsigned>(p.pack_gqa ? p.heads_k : p.heads_q), static_cast<unsigned>(p.batch));
  launch_dependent(flash_fwd_decode_kernel<Tr>, grid, Tr::kNThreads, Tr::kSmemBytes, stream, device, p);
  ATTN_LAUNCH_CHECK("flash_fwd_decode_kernel");
}

}  // namespace attn::flash
