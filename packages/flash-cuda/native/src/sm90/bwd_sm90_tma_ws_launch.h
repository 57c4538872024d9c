// Host side of the TMA warp-specialized dK/dV kernel: the tensor maps of its call, then the launch (one CTA
// per 128-key block, key head and batch row; the consumer warpgroups and the producer warpgroup).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "attn/cuda_check.h"
#include "common/bwd_params.h"
#include "sm90/flash_bwd_sm90_tma_ws_kernel.h"
#include "sm90/tensor_maps.h"

namespace attn::flash {

// The kernel's arguments for a dense call (bwd_dispatch.cu tma_ws_declines checked what the maps need: dense
// tensors, 16-byte aligned, positive strides that are multiples of 8 elements).
template <typename Tr>
BwdTmaArgs bwd_tma_args(const BwdParams& p) {
  using E = typename Tr::Element;
  constexpr CUtensorMapDataType kType =
      std::is_same_v<E, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const FwdParams& f = p.f;
  const uint64_t d = static_cast<uint64_t>(f.head_dim), sq = static_cast<uint64_t>(f.seqlen_q),
                 sk = static_cast<uint64_t>(f.seqlen_k), hq = static_cast<uint64_t>(f.heads_q),
                 hk = static_cast<uint64_t>(f.heads_k), batch = static_cast<uint64_t>(f.batch);
  const uint32_t q_box[4] = {64, Tr::kBlockM, 1, 1}, kv_box[4] = {64, Tr::kBlockN, 1, 1};
  BwdTmaArgs a{};
  a.p = p;
  thread_local sm90::TiledMapCache q_map, k_map, v_map, dout_map, dq_map;  // sm90/tensor_maps.h
  a.q = q_map.get(kType, 2, f.q, {d, sq, hq, batch}, {f.q_row_stride, f.q_head_stride, f.q_batch_stride}, q_box, "q");
  a.k = k_map.get(kType, 2, f.k, {d, sk, hk, batch}, {f.k_row_stride, f.k_head_stride, f.k_batch_stride}, kv_box, "k");
  a.v = v_map.get(kType, 2, f.v, {d, sk, hk, batch}, {f.v_row_stride, f.v_head_stride, f.v_batch_stride}, kv_box, "v");
  a.dout = dout_map.get(kType, 2, p.dout, {d, sq, hq, batch}, {p.do_row_stride, p.do_head_stride, p.do_batch_stride},
                        q_box, "dout");
  if (p.dq_accum != nullptr) {  // every call the kernel runs (bwd_dispatch.cu: the workspace in both modes)
    // Workspace rows are indexed like lse (b * lse_batch_stride + h * lse_head_stride + i), dq_accum_stride
    // floats each; the map's row extent is the sequence, so a block's rows past its end are never added.
    const int64_t rs = p.dq_accum_stride;
    const uint32_t dq_box[4] = {Tr::kDqBoxCols, Tr::kBlockM, 1, 1};
    a.dq_accum = dq_map.get(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, p.dq_accum,
                            {static_cast<uint64_t>(p.dq_accum_stride), sq, hq, batch},
                            {rs, f.lse_head_stride * rs, f.lse_batch_stride * rs}, dq_box, "the dQ workspace");
  }
  return a;
}

// Launches the kernel (its dynamic shared memory limit raised by the caller, flash_bwd_launch.h).
template <typename Tr>
void launch_bwd_sm90_tma_ws(const BwdParams& p, cudaStream_t stream) {
  const BwdTmaArgs a = bwd_tma_args<Tr>(p);
  const dim3 grid(static_cast<unsigned>(p.n_blocks), static_cast<unsigned>(p.f.heads_k),
                  static_cast<unsigned>(p.f.batch));
  flash_bwd_sm90_tma_ws_kernel<Tr><<<grid, Tr::kLaunchThreads, Tr::kSmemBytes, stream>>>(a);
  ATTN_LAUNCH_CHECK("flash_bwd_sm90_tma_ws_kernel");
}

}  // namespace attn::flash
