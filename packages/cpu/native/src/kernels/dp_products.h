// The products of forward_bf16_pairs.h (and of the backward, backward_bf16_pairs.h) on AVX512-BF16:
// vdpbf16ps register tiles (gemm_bf16.h), reading the same packed layouts as the AMX products. A pair
// of bf16 read as one uint32 is (element 2k, element 2k+1) of a row: K rows give pairs of dims, V^T
// rows pairs of keys.
#pragma once
#include <cstdint>

#include "kernels/gemm_bf16.h"

namespace attn_cpu {
namespace ATTN_ISA {

struct DpProducts {
  static constexpr const char* kName = "bf16-dpbf16";
  static void begin() {}
  static void end() {}

  // C[M x N] (+)= A[M x K] . B[K x N], the layouts of AmxProducts::mm (N a multiple of 16, K even).
  template <bool kAcc>
  static void mm(int64_t M, int64_t N, int64_t K, const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb,
                 float* c, int64_t ldc) {
    gemm_bf16<kAcc>(M, N, K / 2, reinterpret_cast<const uint32_t*>(a), lda / 2, b, ldb, c, ldc);
  }
  static void qk(float* st, const uint16_t* k, int64_t dp, const uint16_t* qv, int64_t n) {
    gemm_bf16<false>(n, 64, dp / 2, reinterpret_cast<const uint32_t*>(k), dp / 2, qv, 64, st, 64);
  }
  static void pv(float* ot, const uint16_t* vt, int64_t vld, int64_t dv, int64_t, const uint16_t* pb, int64_t n) {
    gemm_bf16<true>(dv, 64, (n + 1) / 2, reinterpret_cast<const uint32_t*>(vt), vld / 2, pb, 64, ot, 64);
  }
};

}  // namespace ATTN_ISA
}  // namespace attn_cpu
