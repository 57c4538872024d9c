// Launch sequence of one backward call, one template per (dK/dV traits, dQ traits), instantiated by the
// generated files generated/bwd_*.cu:
//   Dsum = rowsum(dO * O)  ->  default: zero the dQ workspace, dK/dV kernel with dQ atomics, convert dQ
//                              deterministic: dK/dV kernel, then the dQ kernel (fixed key order); on the TMA
//                              kernel: zero the workspace and the turn counters, dK/dV kernel adding dQ in
//                              key-block order, convert dQ
//   (with seqused_k, a pass that zeroes dK/dV of the unused keys, which no kernel above writes)
// all on the caller's stream.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "attn/cuda_check.h"
#include "common/bwd_params.h"
#include "bwd/bwd_prepost.h"
#include "bwd/flash_bwd_dq_kernel.h"
#include "bwd/flash_bwd_kernel.h"
#include "bwd/flash_bwd_2d_kernel.h"
#include "sm90/flash_bwd_sm90_kernel.h"
#include "sm90/flash_bwd_sm90_roles_kernel.h"
#include "sm90/bwd_sm90_tma_ws_launch.h"
#include "launch/smem_opt_in.h"

namespace attn::flash {

// The dK/dV kernel body of a traits type (its kForm): row-tiled, 2-D tiled (bwd_traits.h) or the cp.async
// Hopper one (wgmma, sm90/bwd_sm90_traits.h). The TMA warp-specialized form has its own launch
// (sm90/bwd_sm90_tma_ws_launch.h: its parameters carry tensor maps).
template <typename Tr>
constexpr auto dkdv_kernel() {
  if constexpr (Tr::kForm == BwdForm::kSm90) {
    if constexpr (Tr::kRoles)
      return flash_bwd_sm90_roles_kernel<Tr>;
    else
      return flash_bwd_sm90_kernel<Tr>;
  } else if constexpr (Tr::kForm == BwdForm::kTiled2d)
    return flash_bwd_dkdv_2d_kernel<Tr>;
  else
    return flash_bwd_dkdv_kernel<Tr>;
}

template <typename Tr, typename DqTr>
void run_bwd(const BwdParams& p, cudaStream_t stream, int device) {
  using E = typename Tr::Element;
  static std::atomic<uint64_t> dkdv_opted{0}, dq_opted{0};
  const bool dq_kernel = p.dq_accum == nullptr;  // deterministic, and the dK/dV kernel leaves dQ out
  if (dq_kernel) opt_in_smem(flash_bwd_dq_kernel<DqTr>, DqTr::kSmemBytes, dq_opted, device);

  run_bwd_dsum<E>(p, stream);              // also zeroes the dQ workspace (where there is one)
  run_bwd_zero_unused_keys<E>(p, stream);  // seqused_k only: dK/dV of the keys past it
  if constexpr (Tr::kForm == BwdForm::kSm90TmaWs) {
    if (p.dq_turns != nullptr) {
      const int64_t turns =
          int64_t(p.f.batch) * p.f.heads_q * ((int64_t(p.f.seqlen_q) + p.dq_turn_rows - 1) / p.dq_turn_rows);
      ATTN_CUDA_CHECK(cudaMemsetAsync(p.dq_turns, 0, static_cast<size_t>(turns) * sizeof(int), stream));
    }
    opt_in_smem(flash_bwd_sm90_tma_ws_kernel<Tr>, Tr::kSmemBytes, dkdv_opted, device);
    launch_bwd_sm90_tma_ws<Tr>(p, stream);
  } else {
    // p.stages is fixed per device (by its opt-in limit); the 2-D tiled and Hopper forms always run two (the
    // dispatcher checks they fit)
    const int dkdv_smem = Tr::kForm == BwdForm::kRowTiled ? Tr::smem_bytes(p.stages) : Tr::smem_bytes(2);
    const auto kernel = dkdv_kernel<Tr>();
    opt_in_smem(kernel, dkdv_smem, dkdv_opted, device);
    const dim3 grid(static_cast<unsigned>(p.n_blocks * Tr::kColSplits), static_cast<unsigned>(p.f.heads_k),
                    static_cast<unsigned>(p.f.batch));
    kernel<<<grid, Tr::kNThreads, dkdv_smem, stream>>>(p);
    ATTN_LAUNCH_CHECK("flash_bwd_dkdv_kernel");
  }
  if (dq_kernel) {
    const dim3 grid_dq(static_cast<unsigned>(p.m_blocks), static_cast<unsigned>(p.f.heads_q),
                       static_cast<unsigned>(p.f.batch));
    flash_bwd_dq_kernel<DqTr><<<grid_dq, DqTr::kNThreads, DqTr::kSmemBytes, stream>>>(p);
    ATTN_LAUNCH_CHECK("flash_bwd_dq_kernel");
  } else {
    run_bwd_convert_dq<E>(p, stream);
  }
}

}  // namespace attn::flash
