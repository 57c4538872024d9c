// The entry points each SIMD translation unit (isa_*.cpp) defines, and what dispatch.cpp picks from.
#pragma once
#include "problem.h"

namespace attn_cpu {

struct KernelSet {
  const char* name;
  void (*forward)(const FwdProblem&);
  void (*backward)(const BwdProblem&);
  // "isa/path" that forward runs for a dtype, e.g. "avx512bf16/bf16-dpbf16".
  const char* (*forward_path)(DType);
  const char* (*backward_path)(DType);
};

extern const KernelSet kKernelsPortable;
#if defined(__x86_64__)
extern const KernelSet kKernelsAvx2;
extern const KernelSet kKernelsAvx512;
extern const KernelSet kKernelsAvx512Bf16;
extern const KernelSet kKernelsAmx;
#endif
#if defined(__aarch64__)
extern const KernelSet kKernelsNeon;
#endif
#if defined(ATTN_CPU_SVE256)
extern const KernelSet kKernelsSve256;
#endif

}  // namespace attn_cpu
