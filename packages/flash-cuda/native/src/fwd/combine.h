// Split-KV merge: out = sum_s exp(lse_s - lse) * O_s, lse = log sum_s exp(lse_s), from float32 partials.
#pragma once
#include <cuda_runtime.h>

#include "common/fwd_params.h"

namespace attn::flash {

// Launches the combine kernel for p (p.num_splits > 1, partials already written on `stream`), as a
// programmatic dependent of the forward before it where the device allows (common/dependent_launch.h).
void run_combine(const FwdParams& p, bool bf16, cudaStream_t stream, int device);

}  // namespace attn::flash
