// AVX2 + FMA + F16C kernels; compiled with those flags only (CMakeLists.txt).
#define ATTN_ISA avx2
#include "simd/avx2.h"

namespace attn_cpu::avx2 {
// 6 rows x 16 columns: 12 ymm accumulators, 2 for B, 1 broadcast (of 16 registers).
constexpr int kMR = 6;
constexpr int64_t kQB = 64;  // query rows per task
constexpr int64_t kKB = 64;  // keys per block
constexpr int kNV = 2;
}  // namespace attn_cpu::avx2

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/isa_common.h"

namespace attn_cpu {
namespace {
const char* fwd_path(DType) { return "avx2/fp32"; }
const char* bwd_path(DType) { return "avx2/fp32"; }
}  // namespace
const KernelSet kKernelsAvx2{"avx2", &avx2::forward_entry, &avx2::backward_entry, &fwd_path, &bwd_path};
}  // namespace attn_cpu
