// The body of an fp32 SIMD translation unit: include after defining ATTN_ISA, the simd header and
// the micro-kernel tile shape (kMR rows x kNV vectors). Defines <isa>::forward / backward.
#pragma once
#include "kernels/backward.h"
#include "kernels/forward_f32.h"

namespace attn_cpu {
namespace ATTN_ISA {

inline void forward_entry(const FwdProblem& p) { forward_f32(p); }
inline void backward_entry(const BwdProblem& p) { backward_impl<F32Ops>(p); }

}  // namespace ATTN_ISA
}  // namespace attn_cpu
