// Split-KV merge: out = sum_s exp(lse_s - lse) * O_s, lse = log sum_s exp(lse_s), from float32 partials.
#pragma once
#include <cuda_runtime.h>

#include "common/fwd_params.h"

namespace attn::flash {

// Launches the combine kernel for p (p.num_splits > 1, partials already written on `stream`).
// pdl: launch as a programmatic dependent of the kernel before it on the stream (sm90 and newer).
void run_combine(const FwdParams& p, bool bf16, bool pdl, cudaStream_t stream);

}  // namespace attn::flash
