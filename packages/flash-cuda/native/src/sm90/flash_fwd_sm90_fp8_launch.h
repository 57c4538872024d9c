// Launch template of the Hopper fp8 forward kernel, instantiated in sm90/fwd_sm90_fp8.cu. dispatch.cu launches
// it only on sm90 devices and only when the addon holds sm_90a code (elsewhere the kernel body is empty).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "common/fwd_params.h"
#include "sm90/flash_fwd_sm90_fp8_kernel.h"
#include "sm90/fwd_sm90_grid_launch.h"

namespace attn::flash {

template <typename Tr>
void run_fwd_sm90_fp8(const FwdParams& p, cudaStream_t stream, int device) {
  static std::atomic<uint64_t> opted_in{0};
  launch_fwd_sm90_grid<Tr::kSmemBytes, Tr::kLaunchThreads>(flash_fwd_sm90_fp8_kernel<Tr>, opted_in, p, p, stream,
                                                           device);
  ATTN_LAUNCH_CHECK("flash_fwd_sm90_fp8_kernel");
}

}  // namespace attn::flash
