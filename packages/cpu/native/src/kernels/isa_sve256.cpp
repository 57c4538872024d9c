// SVE kernels for 256-bit vectors (Neoverse V1: Graviton3): the fp32 micro-kernels on 8-lane vectors,
// bf16 and fp16 widened to fp32. Compiled with -march=armv8.2-a+sve -msve-vector-bits=256 (CMakeLists.txt);
// dispatch.cpp runs it only where SVE is present with a 256-bit vector length.
#define ATTN_ISA sve256
#include "simd/sve256.h"

namespace attn_cpu::sve256 {
// 6 rows x 32 columns: 24 of the 32 z registers accumulate, 4 hold B, 1 the broadcast of A.
constexpr int kMR = 6;
constexpr int64_t kQB = 64;  // query rows per task
constexpr int64_t kKB = 64;  // keys per block
constexpr int kNV = 4;
}  // namespace attn_cpu::sve256

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/isa_common.h"

namespace attn_cpu {
namespace {
const char* fwd_path(DType) { return "sve256/fp32"; }
const char* bwd_path(DType) { return "sve256/fp32"; }
}  // namespace
const KernelSet kKernelsSve256{"sve256", &sve256::forward_entry, &sve256::backward_entry, &fwd_path, &bwd_path};
}  // namespace attn_cpu
