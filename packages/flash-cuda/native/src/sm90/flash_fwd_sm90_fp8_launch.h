// Launch template of the Hopper fp8 forward kernel, instantiated in sm90/fwd_sm90_fp8.cu. dispatch.cu launches
// it only on sm90 devices and only when the addon holds sm_90a code (elsewhere the kernel body is empty).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "launch/smem_opt_in.h"
#include "sm90/flash_fwd_sm90_fp8_kernel.h"

namespace attn::flash {

template <typename Tr>
void run_fwd_sm90_fp8(const FwdParams& p, cudaStream_t stream, int device) {
  constexpr int kSmem = Tr::kSmemBytes;
  auto kernel = flash_fwd_sm90_fp8_kernel<Tr>;
  static std::atomic<uint64_t> opted_in{0};
  opt_in_smem(kernel, kSmem, opted_in, device, true);
  const dim3 grid(static_cast<unsigned>(p.m_blocks), static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
  launch_dependent(kernel, grid, Tr::kLaunchThreads, kSmem, stream, device, p);
  ATTN_LAUNCH_CHECK("flash_fwd_sm90_fp8_kernel");
}

}  // namespace attn::flash
