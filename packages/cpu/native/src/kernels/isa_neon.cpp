// AArch64 Advanced SIMD (NEON) kernels: the fp32 micro-kernels on 4-lane vectors; bf16 and fp16 are
// widened to fp32 (on load, or once per call for K and V). Built only for arm64 targets.
#define ATTN_ISA neon
#include "simd/neon.h"

namespace attn_cpu::neon {
// 6 rows x 16 columns: 24 of the 32 q registers accumulate, 4 hold B, 1 the broadcast of A.
constexpr int kMR = 6;
constexpr int64_t kQB = 64;  // query rows per task
constexpr int64_t kKB = 64;  // keys per block
constexpr int kNV = 4;
}  // namespace attn_cpu::neon

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/isa_common.h"

namespace attn_cpu {
namespace {
const char* fwd_path(DType) { return "neon/fp32"; }
const char* bwd_path(DType) { return "neon/fp32"; }
}  // namespace
const KernelSet kKernelsNeon{"neon", &neon::forward_entry, &neon::backward_entry, &fwd_path, &bwd_path};
}  // namespace attn_cpu
