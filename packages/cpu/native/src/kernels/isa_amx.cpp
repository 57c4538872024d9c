// AMX kernels (Sapphire Rapids and later): the bf16 forward and backward on tile multiplies. Other
// dtypes run the AVX-512 kernels (isa_avx512.cpp), which every AMX CPU runs too.
#define ATTN_ISA amx
#include "simd/avx512.h"

namespace attn_cpu::amx {
constexpr int kMR = 6;
constexpr int64_t kQB = 64;   // query rows per task (the bf16 products need 64)
constexpr int64_t kKB = 128;  // keys per block (a multiple of 64; 128 halves O^T's tile traffic per key)
constexpr int kNV = 4;
}  // namespace attn_cpu::amx

#include "kernels/gemm.h"
#include "kernels/amx_products.h"
#include "kernels/forward_bf16_pairs.h"
#include "kernels/backward_bf16_pairs.h"
#include "kernels/isa.h"

namespace attn_cpu {
namespace {
// bf16 on AMX tiles, except short queries (decode): there packing K and V^T for the tiles would
// cost more than the products, and the AVX-512 kernel reads the bf16 elements in place.
void forward(const FwdProblem& p) {
  if (p.dtype == DType::kBFloat16 && !amx::short_queries(p)) return amx::forward_bf16_pairs<amx::AmxProducts>(p);
  kKernelsAvx512.forward(p);
}
void backward(const BwdProblem& p) {
  if (p.dtype == DType::kBFloat16) return amx::backward_bf16_pairs<amx::AmxProducts>(p);
  kKernelsAvx512.backward(p);
}
const char* fwd_path(DType dt) {
  return dt == DType::kBFloat16 ? "amx/bf16-amx (short queries: avx512/fp32)" : "avx512/fp32";
}
const char* bwd_path(DType dt) { return dt == DType::kBFloat16 ? "amx/bf16-amx" : "avx512/fp32"; }
}  // namespace
const KernelSet kKernelsAmx{"amx", &forward, &backward, &fwd_path, &bwd_path};
}  // namespace attn_cpu
