// Launch template of the decode kernel (flash_fwd_decode_kernel.h), one per DecodeTraits, instantiated by
// the generated files in instantiations/.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "flash_fwd_decode_kernel.h"
#include "fwd_params.h"

namespace attn::flash {

template <typename Tr>
void run_fwd_decode(const FwdParams& p, cudaStream_t stream, int device) {
  constexpr int kSmem = Tr::kSmemBytes;
  // The opt-in above 48 KB and the carveout are per device; remember them (devices 0..63).
  static std::atomic<uint64_t> opted_in{0};
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(opted_in.load(std::memory_order_relaxed) & bit)) {
    if (kSmem > 48 * 1024) {
      ATTN_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_decode_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    }
    // All of the SM's shared memory for the stage rings (the K/V copies are cp.async.cg, which bypass L1).
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_decode_kernel<Tr>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
    opted_in.fetch_or(bit, std::memory_order_relaxed);
  }
  const dim3 grid(static_cast<unsigned>(p.m_blocks * p.num_splits),
                  static_cast<unsigned>(p.pack_gqa ? p.heads_k : p.heads_q), static_cast<unsigned>(p.batch));
  flash_fwd_decode_kernel<Tr><<<grid, Tr::kNThreads, kSmem, stream>>>(p);
  ATTN_LAUNCH_CHECK("flash_fwd_decode_kernel");
}

}  // namespace attn::flash
