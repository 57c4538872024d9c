// The backward's small passes around the main kernels: Dsum = rowsum(dO * O) before, and after the
// default (atomic) mode the float32 dQ workspace converted to the output dtype with the scale applied.
#pragma once
#include <cuda_runtime.h>

#include "bwd_params.h"

namespace attn::flash {

// Dsum for every query row (one warp per row); rows are indexed like lse.
template <typename E>
void run_bwd_dsum(const BwdParams& p, cudaStream_t stream);
// dq = scale * dq_accum in the output dtype.
template <typename E>
void run_bwd_convert_dq(const BwdParams& p, cudaStream_t stream);

}  // namespace attn::flash
