// The per-element score rules that both CUDA backends compute the same way, forward and backward, in the score
// order every backend follows (docs/ARCHITECTURE.md: scale * q.k, then softcap, then ALiBi, then the mask;
// dropout on the probabilities). One definition per rule, so that flash-cuda and memeff-cuda round each the same
// way. What stays in the backends is what truly differs: which tiles need the rules at all, how a thread finds the
// rows and keys of its accumulator elements, how the causal / window bounds are precomputed per tile, the units
// (log2 or natural-log), the tanh a kernel affords (`tanh_ex2` for 16-bit outputs; memeff's fp32 kernels take
// tanhf's value), and how a kernel turns a dropout decision (attn/philox.h's `dropout_keep`) into its factor.
#pragma once
#include <cmath>

#include "attn/fast_math.h"

namespace attn {
inline namespace score_mods {

// d(softcap * tanh(u)) / d(softcap * u) = 1 - th^2: the softcap's factor in the backward's chain rule, from
// th = tanh(u) as the forward rule computed it.
__device__ __forceinline__ float softcap_grad(float th) { return fmaf(-th, th, 1.f); }

// ALiBi's term: s - slope * |distance|, distance = i + diagonal offset - j (the caller forms it exactly, as a
// float, below 2^24), in the units of s and slope.
__device__ __forceinline__ float add_alibi(float s, float slope, float distance) {
  return fmaf(-slope, fabsf(distance), s);
}

// The softmax's backward of one element: dS = P * (dP - D), D = rowsum(dO * O), dP with its dropout factor applied
// (the gradient of the score before the softcap's factor).
__device__ __forceinline__ float softmax_grad(float prob, float dp, float dsum) { return prob * (dp - dsum); }

}  // namespace score_mods
}  // namespace attn
