// AVX512-BF16 kernels: the bf16 forward and backward with vdpbf16ps products (forward_bf16_pairs.h,
// backward_bf16_pairs.h: the AMX kernel's layouts on register tiles). Other dtypes run the AVX-512
// fp32 kernels (isa_avx512.cpp), which every AVX512-BF16 CPU runs.
#define ATTN_ISA avx512bf16
#include "simd/avx512.h"

namespace attn_cpu::avx512bf16 {
constexpr int kMR = 6;
constexpr int64_t kQB = 64;  // query rows per task (the bf16 products need 64)
constexpr int64_t kKB = 64;  // keys per block
constexpr int kNV = 4;
// bf16 tile: 6 rows x 64 columns of fp32 accumulators (24 zmm).
constexpr int kBfMR = 6;
constexpr int kBfNV = 4;
}  // namespace attn_cpu::avx512bf16

#include "kernels/gemm.h"
#include "kernels/dp_products.h"
#include "kernels/forward_bf16_pairs.h"
#include "kernels/backward_bf16_pairs.h"
#include "kernels/isa.h"

namespace attn_cpu {
namespace {
void forward(const FwdProblem& p) {
  if (p.dtype == DType::kBFloat16 && !avx512bf16::short_queries(p))
    return avx512bf16::forward_bf16_pairs<avx512bf16::DpProducts>(p);
  kKernelsAvx512.forward(p);
}
void backward(const BwdProblem& p) {
  if (p.dtype == DType::kBFloat16) return avx512bf16::backward_bf16_pairs<avx512bf16::DpProducts>(p);
  kKernelsAvx512.backward(p);
}
const char* fwd_path(DType dt) {
  return dt == DType::kBFloat16 ? "avx512bf16/bf16-dpbf16 (short queries: avx512/fp32)" : "avx512/fp32";
}
const char* bwd_path(DType dt) { return dt == DType::kBFloat16 ? "avx512bf16/bf16-dpbf16" : "avx512/fp32"; }
}  // namespace
const KernelSet kKernelsAvx512Bf16{"avx512bf16", &forward, &backward, &fwd_path, &bwd_path};
}  // namespace attn_cpu
