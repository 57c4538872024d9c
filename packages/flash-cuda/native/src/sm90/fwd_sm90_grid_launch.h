// The launch both Hopper forward kernels share (flash_fwd_sm90_launch.h, flash_fwd_sm90_fp8_launch.h): the opt-in
// to their shared memory and the largest carveout once per device, then a grid of (query blocks, query heads,
// batch) CTAs as a programmatic dependent launch. `opted_in` is the caller's, one per kernel; `args` the kernel's
// one argument (the parameters, or the parameters with tensor maps).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "launch/smem_opt_in.h"

namespace attn::flash {

template <int kSmem, int kThreads, typename Kernel, typename Args>
void launch_fwd_sm90_grid(Kernel kernel, std::atomic<uint64_t>& opted_in, const FwdParams& p, const Args& args,
                          cudaStream_t stream, int device) {
  opt_in_smem(kernel, kSmem, opted_in, device, true);
  const dim3 grid(static_cast<unsigned>(p.m_blocks), static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
  launch_dependent(kernel, grid, kThreads, kSmem, stream, device, args);
}

}  // namespace attn::flash
