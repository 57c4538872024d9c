// The per-device launch attributes a kernel needs before its first launch: dynamic shared memory above the
// default 48 KB and, for the forward kernels, the largest shared-memory carveout. Both are per device and
// kernel, so each launch template keeps one `done` mask per kernel (devices 0..63; others set them each call).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"

namespace attn::flash {

// max_carveout asks for the largest shared-memory carveout, so that as many CTAs as the registers allow are
// resident per SM (the default is only a hint to the driver; the forward kernels' K/V loads are cp.async.cg or
// TMA, which bypass L1, so the smaller L1 costs nothing there).
template <typename Kernel>
void opt_in_smem(Kernel kernel, int bytes, std::atomic<uint64_t>& done, int device, bool max_carveout = false) {
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (done.load(std::memory_order_relaxed) & bit) return;
  if (bytes > 48 * 1024)
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  if (max_carveout)
    ATTN_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  done.fetch_or(bit, std::memory_order_relaxed);
}

}  // namespace attn::flash
