// Forward launch templates (grid shapes; shared memory opt-in for the tensor-core path).
#pragma once
#include <stdexcept>

#include "attn/cuda_check.h"
#include "fwd/fwd_mma.cuh"
#include "fwd/fwd_simt.cuh"
#include "fwd/fwd_tf32.cuh"
#include "fwd/fwd_tf32_wgmma.cuh"
#include "launch/launchers.h"

namespace memeff {

// A tensor-core forward over its grid, one block per (Tr::kBlockM queries, b and query head), with `smem` bytes of
// dynamic shared memory (opted in past 48 KB). `what`: the launch error's words ("launch of ..." as ATTN_LAUNCH_CHECK).
template <typename Tr, typename Kernel>
void launch_query_blocks(Kernel kernel, int smem, const FwdParams& p, cudaStream_t stream, const char* what) {
  if (smem > 48 * 1024) {
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  }
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_q, [&](const FwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_q, Tr::kBlockM), n);
    kernel<<<grid, Tr::kThreads, smem, stream>>>(q);
    ::attn::cuda_check(gpuGetLastError(), what, __FILE__, __LINE__);
  });
}

template <typename T, int kBucket>
void run_fwd_simt(const FwdParams& p, cudaStream_t stream) {
  using Tr = SimtFwdTraits<kBucket>;
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_q, [&](const FwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_q, Tr::kBlockM), n, ceil_div(p.head_dim_v, kBucket));
    fwd_simt_kernel<T, Tr><<<grid, Tr::kThreads, 0, stream>>>(q);
    ATTN_LAUNCH_CHECK("memeff fwd_simt_kernel");
  });
}
template <typename T, int kBucket>
const void* probe_fwd_simt() {
  return reinterpret_cast<const void*>(&fwd_simt_kernel<T, SimtFwdTraits<kBucket>>);
}

// D == Dv == the bucket takes the kernel with compile-time head-dim loops (fwd_mma.cuh). Calls with features
// (FwdParams::features) take the feature kernel, the others the mask-free one unless they have a mask. An exact
// head dim (mma_traits.h) has only the compile-time form and no feature kernel: dispatch.cu sends it only
// D == Dv == its head dim without features.
template <typename T, typename Tr, bool kFull>
void launch_fwd_mma(const FwdParams& p, cudaStream_t stream) {
  const bool masked = p.mask_kind != MaskKind::kNone;
  auto kernel = masked ? &fwd_mma_kernel<T, Tr, kFull, true, false> : &fwd_mma_kernel<T, Tr, kFull, false, false>;
  if constexpr (!Tr::kExact) {
    if (p.features) kernel = &fwd_mma_kernel<T, Tr, kFull, true, true>;
  }
  static_assert(Tr::kSmemMaskBytes == MaskTile<Tr::kBlockM, Tr::kBlockN>::kBytes, "mask tile size");
  const int smem = Tr::kSmemBytes + (p.mask_kind != MaskKind::kNone ? Tr::kSmemMaskBytes : 0);
  launch_query_blocks<Tr>(kernel, smem, p, stream, "launch of memeff fwd_mma_kernel");
}

template <typename T, int kHeadDim>
void run_fwd_mma(const FwdParams& p, cudaStream_t stream) {
  using Tr = MmaFwdTraits<kHeadDim>;
  const bool full = p.head_dim == kHeadDim && p.head_dim_v == kHeadDim;
  if constexpr (Tr::kExact) {
    if (!full || p.features) {
      throw std::logic_error(
          "memeff-cuda: an exact head dim's forward runs only D == Dv == it without features (dispatch.cu decides)");
    }
    launch_fwd_mma<T, Tr, true>(p, stream);
  } else if (full) {
    launch_fwd_mma<T, Tr, true>(p, stream);
  } else {
    launch_fwd_mma<T, Tr, false>(p, stream);
  }
}
template <typename T, int kHeadDim>
const void* probe_fwd_mma() {
  using Tr = MmaFwdTraits<kHeadDim>;
  return reinterpret_cast<const void*>(&fwd_mma_kernel<T, Tr, Tr::kExact, true, false>);
}

// fp32 on tensor cores (3xTF32). T is float; it is a parameter only so that the generated units
// name every family the same way.
template <typename Tr, bool kLean, bool kWideQPre = false, bool kPacked = false, bool kFeat = false>
void launch_fwd_tf32(const FwdParams& p, cudaStream_t stream) {
  auto kernel = &fwd_tf32_kernel<Tr, kLean, kWideQPre, kPacked, kFeat>;
  static_assert(Tr::kSmemMaskBytes == MaskTile<Tr::kBlockM, Tr::kBlockN>::kBytes, "mask tile size");
  constexpr int kQLoBytes = kLean && !Tr::kSplitKV ? Tr::kSmemQ * 4 : 0;  // the kernel's kQPre array
  // The packed form has its own carve (tf32_traits.h); sm90's opt-in limit is 227 KB per block.
  constexpr int kBytes = kPacked ? Tr::packed_smem_bytes(kWideQPre) : Tr::kSmemBytes + kQLoBytes;
  static_assert(!kPacked || kBytes + (kWideQPre ? 0 : Tr::kSmemMaskBytes) <= 227 * 1024, "fits sm90's shared memory");
  const int smem = kBytes + (p.mask_kind != MaskKind::kNone ? Tr::kSmemMaskBytes : 0);
  launch_query_blocks<Tr>(kernel, smem, p, stream, "launch of memeff fwd_tf32_kernel");
}

// Both GEMMs on wgmma (sm_90a; FwdParams::tf32_wgmma). Masks at d128 only: at d64 the mma.sync kernel stages
// the mask tile in shared memory with 3 blocks per SM and is faster. Calls with features take the feature
// kernel, with or without a mask, at both head dims; without a mask, calls without softcap and ALiBi take
// the feature kernel built without them (kMods = false: the d64 form runs at its 128 registers, where their
// code costs the other steps).
template <typename Tr>
void launch_fwd_tf32_wgmma(const FwdParams& p, cudaStream_t stream) {
  const bool masked = p.mask_kind != MaskKind::kNone;
  auto kernel = &fwd_tf32_wgmma_kernel<Tr, false, false>;
  if (p.features) {
    kernel = masked              ? &fwd_tf32_wgmma_kernel<Tr, true, true>
             : has_score_mods(p) ? &fwd_tf32_wgmma_kernel<Tr, false, true>
                                 : &fwd_tf32_wgmma_kernel<Tr, false, true, false>;
  } else if (masked) {
    if constexpr (Tr::kHeadDim == 128) {
      kernel = &fwd_tf32_wgmma_kernel<Tr, true, false>;
    } else {
      throw std::logic_error(
          "memeff-cuda: the d64 wgmma forward takes a mask only with features (dispatch.cu decides)");
    }
  }
  launch_query_blocks<Tr>(kernel, Tr::kSmemBytes, p, stream, "launch of memeff fwd_tf32_wgmma_kernel");
}

// Off wgmma (a build without sm_90a code, or the d64 masked calls): calls with features take the 4-warp
// feature kernel; d128 the wide packed form (8 warps, K and V split once per step by the block; Q's parts
// beside them without a mask), d64 the lean 4-warp form.
template <typename T, int kBucket>
void run_fwd_tf32(const FwdParams& p, cudaStream_t stream) {
  if (p.tf32_wgmma) {
    launch_fwd_tf32_wgmma<Tf32WgmmaFwdTraits<kBucket>>(p, stream);
  } else if (p.features) {
    launch_fwd_tf32<Tf32FwdTraits<kBucket>, false, false, false, true>(p, stream);
  } else if constexpr (kBucket == 128) {
    if (p.mask_kind == MaskKind::kNone) {
      launch_fwd_tf32<Tf32FwdTraits<kBucket, 8>, true, true, true>(p, stream);
    } else {
      launch_fwd_tf32<Tf32FwdTraits<kBucket, 8>, true, false, true>(p, stream);
    }
  } else {
    launch_fwd_tf32<Tf32FwdTraits<kBucket>, true>(p, stream);
  }
}
template <typename T, int kBucket>
const void* probe_fwd_tf32() {
  return reinterpret_cast<const void*>(&fwd_tf32_kernel<Tf32FwdTraits<kBucket>, false, false, false, true>);
}

}  // namespace memeff
