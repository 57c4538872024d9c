// Launch template of the Hopper forward kernel: one per FwdSm90Traits, instantiated by the generated files
// generated/fwd_sm90_*.cu (variant 'sm90ws'). dispatch.cu launches it only on sm90 devices and only when the addon
// holds sm_90a code (elsewhere the kernel body is empty).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "attn/cuda_check.h"
#include "common/fwd_params.h"
#include "sm90/flash_fwd_sm90_ws_kernel.h"
#include "sm90/fwd_sm90_args.h"
#include "sm90/fwd_sm90_grid_launch.h"
#include "sm90/tensor_maps.h"

namespace attn::flash {

// The kernel's argument, with the maps where the plan found that they can read q, k and v (p.tma_loads: a map
// zero-fills rows only past the end of the whole tensor, so varlen and seqused_k calls, which need zeros past each
// sequence's end, and misaligned ones keep the cp.async producer) and the caller allows them.
template <typename Tr>
FwdSm90Args fwd_sm90_args(const FwdParams& p, bool allow_tma) {
  using E = typename Tr::Element;
  FwdSm90Args a{};
  a.p = p;
  a.tma = allow_tma && p.tma_loads;
  if (!a.tma) return a;
  constexpr CUtensorMapDataType kType =
      std::is_same_v<E, __nv_bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const uint64_t d = static_cast<uint64_t>(p.head_dim), sq = static_cast<uint64_t>(p.seqlen_q),
                 sk = static_cast<uint64_t>(p.seqlen_k), hq = static_cast<uint64_t>(p.heads_q),
                 hk = static_cast<uint64_t>(p.heads_k), batch = static_cast<uint64_t>(p.batch);
  const uint32_t q_box[4] = {64, Tr::kBlockM, 1, 1}, kv_box[4] = {64, Tr::kBlockN, 1, 1};
  thread_local sm90::TiledMapCache q_map, k_map, v_map;
  a.q = q_map.get(kType, 2, p.q, {d, sq, hq, batch}, {p.q_row_stride, p.q_head_stride, p.q_batch_stride}, q_box, "q");
  a.k = k_map.get(kType, 2, p.k, {d, sk, hk, batch}, {p.k_row_stride, p.k_head_stride, p.k_batch_stride}, kv_box, "k");
  a.v = v_map.get(kType, 2, p.v, {d, sk, hk, batch}, {p.v_row_stride, p.v_head_stride, p.v_batch_stride}, kv_box, "v");
  return a;
}

// allow_tma false: the cp.async producer even where the maps would do (the probe's side-by-side comparison).
template <typename Tr>
void launch_fwd_sm90(const FwdParams& p, cudaStream_t stream, int device, bool allow_tma) {
  static_assert(Tr::kSmemBytes > 48 * 1024, "the opt-in is what lets the Hopper tiles launch");
  static std::atomic<uint64_t> opted_in{0};
  const FwdSm90Args a = fwd_sm90_args<Tr>(p, allow_tma);
  if (Tr::kTmaOnly && !a.tma)
    throw std::invalid_argument(
        std::string("flash-cuda: this Hopper tile loads by TMA only, and ") +
        (allow_tma ? "the call's tensors do not fit its tensor maps" : "the TMA is turned off"));
  launch_fwd_sm90_grid<Tr::kSmemBytes, Tr::kLaunchThreads>(flash_fwd_sm90_ws_kernel<Tr>, opted_in, p, a, stream,
                                                           device);
  ATTN_LAUNCH_CHECK("flash_fwd_sm90_ws_kernel");
}

template <typename Tr>
void run_fwd_sm90(const FwdParams& p, cudaStream_t stream, int device) {
  launch_fwd_sm90<Tr>(p, stream, device, true);
}

}  // namespace attn::flash
