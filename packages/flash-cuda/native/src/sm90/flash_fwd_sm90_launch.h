// Launch template of the Hopper forward kernel: one per FwdSm90Traits, instantiated by the generated files
// generated/fwd_sm90_*.cu (variant 'sm90ws'). dispatch.cu launches it only on sm90 devices and only when the addon
// holds sm_90a code (elsewhere the kernel body is empty).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "common/fwd_params.h"
#include "attn/cuda_check.h"
#include "sm90/flash_fwd_sm90_ws_kernel.h"
#include "sm90/fwd_sm90_grid_launch.h"

namespace attn::flash {

template <typename Tr>
void run_fwd_sm90(const FwdParams& p, cudaStream_t stream, int device) {
  static_assert(Tr::kSmemBytes > 48 * 1024, "the opt-in is what lets the Hopper tiles launch");
  static std::atomic<uint64_t> opted_in{0};
  launch_fwd_sm90_grid<Tr::kSmemBytes, Tr::kLaunchThreads>(flash_fwd_sm90_ws_kernel<Tr>, opted_in, p, stream, device);
  ATTN_LAUNCH_CHECK("flash_fwd_sm90_ws_kernel");
}

}  // namespace attn::flash
