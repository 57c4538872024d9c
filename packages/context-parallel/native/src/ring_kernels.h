// The ring's element-wise work on the device, in float32 accumulators: the logsumexp merge of a
// partial (out, lse) into a query chunk's running (out, lse), gradient accumulation, and the final
// rounding to the inputs' dtype. Every tensor is contiguous; `dtype` names the partial's / the
// output's element type (0 float32, 1 float16, 2 bfloat16). Launched on the caller's stream.
#pragma once
#include <cstdint>

#include <cuda_runtime.h>

namespace attn::cp {

enum class Elem : int { f32 = 0, f16 = 1, bf16 = 2 };

// acc_out [rows, dv] f32, acc_lse [rows] f32 (start: 0 and -inf); part_out [rows, dv] elem, part_lse [rows] f32.
// The host merge's rules (merge.ts): a partial with lse -inf is the identity, an acc row with lse -inf
// takes the partial as is, NaN in either lse makes the row NaN.
void merge(float* acc_out, float* acc_lse, const void* part_out, const float* part_lse, int64_t rows, int64_t dv,
           Elem elem, cudaStream_t stream);

// acc[i] += x[i] for n elements; x of `elem`.
void accumulate(float* acc, const void* x, int64_t n, Elem elem, cudaStream_t stream);

// dst[i] = round(src[i]) to `elem`, n elements.
void convert(void* dst, const float* src, int64_t n, Elem elem, cudaStream_t stream);

}  // namespace attn::cp
