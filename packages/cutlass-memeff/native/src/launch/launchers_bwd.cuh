// Backward launch templates: the main SIMT kernels per head-dim bucket, and the auxiliary passes
// (dsum, dq conversion, split reduction, broadcast dbias) per dtype.
#pragma once
#include "attn/cuda_check.h"
#include "bwd/bwd_dbias.cuh"
#include "bwd/bwd_dq_mma.cuh"
#include "bwd/bwd_dsum_tf32.cuh"
#include "bwd/bwd_kv_simt.cuh"
#include "bwd/bwd_mma.cuh"
#include "bwd/bwd_pre_post.cuh"
#include "bwd/bwd_q_simt.cuh"
#include "bwd/bwd_tf32.cuh"
#include "launch/launchers.h"

namespace memeff {

// The FMA dQ pass of deterministic calls (keys in order, no atomics), after either main kernel that skips dQ
// then (bwd_kv_simt, bwd_tf32).
template <typename T, int kBucket>
void launch_bwd_q_simt(const BwdParams& p, cudaStream_t stream) {
  using Tr = SimtBwdTraits<kBucket>;
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_q, [&](const BwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_q, Tr::kBlockM), n, ceil_div(p.head_dim, kBucket));
    bwd_q_simt_kernel<T, Tr><<<grid, Tr::kThreads, 0, stream>>>(q);
    ATTN_LAUNCH_CHECK("memeff bwd_q_simt_kernel");
  });
}

// A tensor-core key-split main kernel (bwd_mma, bwd_tf32) over its grid, one block per (Tr::kBlockN keys and
// a kColSplit-th of their columns, b and kv head, query split), with the shared memory the call needs: the
// tiles, the mask tiles with a mask (where the traits stage them), the GQA presum slots with dbias_presum.
template <typename Tr, typename Kernel>
void launch_key_split(Kernel kernel, const BwdParams& p, cudaStream_t stream) {
  const int smem = key_split_smem_bytes<Tr>(p.mask_kind != MaskKind::kNone, p.dbias_presum);
  if (smem > 48 * 1024) {
    ATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  }
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_kv, [&](const BwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_k, Tr::kBlockN) * Tr::kColSplit, n, p.query_splits);
    kernel<<<grid, Tr::kThreads, smem, stream>>>(q);
    ATTN_LAUNCH_CHECK("memeff key-split backward kernel");
  });
}

template <typename T, int kBucket>
void run_bwd_simt(const BwdParams& p, cudaStream_t stream) {
  using Tr = SimtBwdTraits<kBucket>;
  const int dmax = p.head_dim > p.head_dim_v ? p.head_dim : p.head_dim_v;
  const int n_z = static_cast<int>(ceil_div(dmax, kBucket));
  for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_kv, [&](const BwdParams& q, unsigned n) {
    const dim3 grid(ceil_div(p.seq_k, Tr::kBlockN), n, n_z * p.query_splits);
    bwd_kv_simt_kernel<T, Tr><<<grid, Tr::kThreads, 0, stream>>>(q, n_z);
    ATTN_LAUNCH_CHECK("memeff bwd_kv_simt_kernel");
  });
  if (p.deterministic) launch_bwd_q_simt<T, kBucket>(p, stream);
}
template <typename T, int kBucket>
const void* probe_bwd_simt() {
  return reinterpret_cast<const void*>(&bwd_kv_simt_kernel<T, SimtBwdTraits<kBucket>>);
}

// Calls with features take the feature kernel, the others the mask-free one unless they have a mask.
template <typename T, typename Tr, bool kFull>
void launch_bwd_mma(const BwdParams& p, cudaStream_t stream) {
  const bool masked = p.mask_kind != MaskKind::kNone;
  auto kernel = p.features ? &bwd_mma_kernel<T, Tr, kFull, true, true>
                : masked   ? &bwd_mma_kernel<T, Tr, kFull, true, false>
                           : &bwd_mma_kernel<T, Tr, kFull, false, false>;
  static_assert(Tr::kSmemMaskBytes == 2 * MaskTile<Tr::kBlockM, Tr::kBlockN>::kBytes, "mask tile size");
  launch_key_split<Tr>(kernel, p, stream);
}

// D == Dv == the bucket takes the kernel with compile-time head-dim loops (bwd_mma.cuh).
template <typename T, int kBucket>
void run_bwd_mma(const BwdParams& p, cudaStream_t stream) {
  if (p.head_dim == kBucket && p.head_dim_v == kBucket) {
    launch_bwd_mma<T, MmaBwdTraits<kBucket>, true>(p, stream);
  } else {
    launch_bwd_mma<T, MmaBwdTraits<kBucket>, false>(p, stream);
  }
  if (p.deterministic) {  // dQ in a fixed order: one block per query block walks the keys
    using Td = MmaDqTraits<kBucket>;
    auto dq_kernel = &bwd_dq_mma_kernel<T, Td>;
    if (Td::kSmemBytes > 48 * 1024) {
      ATTN_CUDA_CHECK(cudaFuncSetAttribute(dq_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Td::kSmemBytes));
    }
    for_each_bh_chunk(p, static_cast<int64_t>(p.batch) * p.heads_q, [&](const BwdParams& q, unsigned n) {
      const dim3 grid(ceil_div(p.seq_q, Td::kBlockM), n);
      dq_kernel<<<grid, Td::kThreads, Td::kSmemBytes, stream>>>(q);
      ATTN_LAUNCH_CHECK("memeff bwd_dq_mma_kernel");
    });
  }
}
template <typename T, int kBucket>
const void* probe_bwd_mma() {
  return reinterpret_cast<const void*>(&bwd_mma_kernel<T, MmaBwdTraits<kBucket>, false, true, false>);
}

// fp32 on tensor cores (3xTF32, bwd_tf32.cuh).
// Calls with features and no mask take, at D == Dv == the bucket, the feature kernel built without the
// mask code (its in-view steps are ModRule's alone; the masked build costs the fp32 backward ~10% on them),
// and without softcap and ALiBi code where the call has neither (a window's left side, varlen, sequsedK); at
// d64 those with a softcap and no ALiBi take its kSoftcap form. Other head dims with features take the masked
// feature kernel (only it is built for them).
template <typename Tr, bool kFull>
void launch_bwd_tf32(const BwdParams& p, cudaStream_t stream) {
  const bool masked = p.mask_kind != MaskKind::kNone;
  auto kernel = &bwd_tf32_kernel<Tr, kFull, false, false>;
  if (p.features) {
    kernel = &bwd_tf32_kernel<Tr, kFull, true, true>;
    if constexpr (kFull) {
      constexpr bool kSoftcapForm = Tr::kDSplit == 1;
      if (!masked) {
        const bool softcap_only = p.softcap != 0.f && p.alibi == nullptr;
        kernel = kSoftcapForm && softcap_only ? &bwd_tf32_kernel<Tr, true, false, true, true, kSoftcapForm>
                 : has_score_mods(p)          ? &bwd_tf32_kernel<Tr, true, false, true>
                                              : &bwd_tf32_kernel<Tr, true, false, true, false>;
      }
    }
  } else if (masked) {
    kernel = &bwd_tf32_kernel<Tr, kFull, true, false>;
  }
  static_assert(Tr::kSmemMaskBytes == Tr::kMaskBufs * MaskTile<Tr::kBlockM, Tr::kBlockN>::kBytes, "mask tile size");
  launch_key_split<Tr>(kernel, p, stream);
}

template <typename Tr>
void launch_bwd_tf32_bucket(const BwdParams& p, cudaStream_t stream) {
  if (p.head_dim == Tr::kHeadDim && p.head_dim_v == Tr::kHeadDim) {
    launch_bwd_tf32<Tr, true>(p, stream);
  } else {
    launch_bwd_tf32<Tr, false>(p, stream);
  }
}

// Deterministic calls: dK and dV as always (no atomics), then the FMA dQ pass.
template <typename T, int kBucket>
void run_bwd_tf32(const BwdParams& p, cudaStream_t stream) {
  static_assert(sizeof(T) == 4, "fp32 only");
  launch_bwd_tf32_bucket<Tf32BwdBucketTraits<kBucket>>(p, stream);
  if (p.deterministic) launch_bwd_q_simt<T, kBucket>(p, stream);
}
template <typename T, int kBucket>
const void* probe_bwd_tf32() {
  return reinterpret_cast<const void*>(&bwd_tf32_kernel<Tf32BwdBucketTraits<kBucket>, false, true, false>);
}

template <typename T>
void run_bwd_aux(const BwdParams& p, BwdStage stage, cudaStream_t stream) {
  const int64_t rows_q = static_cast<int64_t>(p.batch) * p.heads_q * p.seq_q;
  const unsigned kGridStride = 4096;  // blocks of the grid-stride element loops
  // A comparison inside <<<...>>> confuses clang-format (it splits the chevrons): clamp outside.
  const auto stride_blocks = [&](unsigned blocks) { return blocks < kGridStride ? blocks : kGridStride; };
  switch (stage) {
    case BwdStage::kDsum:
      if constexpr (sizeof(T) == 4) {
        if (p.dsum_tf32) {  // 16 rows per warp, 4 warps per block
          bwd_dsum_tf32_kernel<T><<<ceil_div(rows_q, 64), 128, 0, stream>>>(p);
          ATTN_LAUNCH_CHECK("memeff bwd_dsum_tf32_kernel");
          break;
        }
      }
      bwd_dsum_kernel<T><<<ceil_div(rows_q, 4), 128, 0, stream>>>(p);
      ATTN_LAUNCH_CHECK("memeff bwd_dsum_kernel");
      break;
    case BwdStage::kDqConvert: {
      const unsigned blocks = ceil_div(rows_q * p.head_dim, 256);
      bwd_dq_convert_kernel<T><<<stride_blocks(blocks), 256, 0, stream>>>(p);
      ATTN_LAUNCH_CHECK("memeff bwd_dq_convert_kernel");
      break;
    }
    case BwdStage::kKvReduce: {
      const int64_t total = static_cast<int64_t>(p.batch) * p.heads_kv * p.seq_k * (p.head_dim + p.head_dim_v);
      const unsigned blocks = ceil_div(total, 256);
      bwd_kv_reduce_kernel<T><<<stride_blocks(blocks), 256, 0, stream>>>(p);
      ATTN_LAUNCH_CHECK("memeff bwd_kv_reduce_kernel");
      break;
    }
    case BwdStage::kDbias:
      for_each_bh_chunk(p, static_cast<int64_t>(p.dbias_size[0]) * p.dbias_size[1],
                        [&](const BwdParams& q, unsigned n) {
                          const dim3 grid(ceil_div(p.dbias_size[3], 32), ceil_div(p.dbias_size[2], 32), n);
                          bwd_dbias_simt_kernel<T><<<grid, 128, 0, stream>>>(q);
                          ATTN_LAUNCH_CHECK("memeff bwd_dbias_simt_kernel");
                        });
      break;
    case BwdStage::kDbiasConvert: {
      const int64_t total = static_cast<int64_t>(p.dbias_size[0]) * p.dbias_size[1] * p.dbias_size[2] * p.dbias_size[3];
      const unsigned blocks = ceil_div(total, 256);
      bwd_dbias_convert_kernel<T><<<stride_blocks(blocks), 256, 0, stream>>>(p, total);
      ATTN_LAUNCH_CHECK("memeff bwd_dbias_convert_kernel");
      break;
    }
  }
}
template <typename T>
const void* probe_bwd_aux() {
  return reinterpret_cast<const void*>(&bwd_dsum_kernel<T>);
}

}  // namespace memeff
