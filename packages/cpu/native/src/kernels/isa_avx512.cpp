// AVX-512 (F, BW, VL, DQ) kernels; compiled with those flags only (CMakeLists.txt).
#define ATTN_ISA avx512
#include "simd/avx512.h"

namespace attn_cpu::avx512 {
// 6 rows x 64 columns: 24 zmm accumulators, 4 for B, 1 broadcast (of 32).
constexpr int kMR = 6;
constexpr int64_t kQB = 64;  // query rows per task
constexpr int64_t kKB = 64;  // keys per block
constexpr int kNV = 4;
}  // namespace attn_cpu::avx512

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/isa_common.h"

namespace attn_cpu {
namespace {
const char* fwd_path(DType) { return "avx512/fp32"; }
const char* bwd_path(DType) { return "avx512/fp32"; }
}  // namespace
const KernelSet kKernelsAvx512{"avx512", &avx512::forward_entry, &avx512::backward_entry, &fwd_path, &bwd_path};
}  // namespace attn_cpu
