// The backward's small passes around the main kernels: Dsum = rowsum(dO * O) before (zeroing the float32
// dQ workspace of the default mode in the same pass), and after the default (atomic) mode that workspace
// converted to the output dtype with the scale applied; with seqused_k, zero gradients of the unused keys.
#pragma once
#include <cuda_runtime.h>

#include "common/bwd_params.h"

namespace attn::flash {

// Dsum for every query row, rows indexed like lse; zeroes the dQ workspace where there is one (p.dq_accum).
template <typename E>
void run_bwd_dsum(const BwdParams& p, cudaStream_t stream);
// dq = scale * dq_accum in the output dtype.
template <typename E>
void run_bwd_convert_dq(const BwdParams& p, cudaStream_t stream);
// With seqused_k: dK and dV rows of the keys past seqused_k[b] set to 0 (the main kernels write only the
// used ones). Nothing to do, and no launch, without it.
template <typename E>
void run_bwd_zero_unused_keys(const BwdParams& p, cudaStream_t stream);

}  // namespace attn::flash
