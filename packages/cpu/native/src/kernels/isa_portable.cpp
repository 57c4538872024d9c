// Portable kernels: plain C++ the compiler auto-vectorizes for the baseline target. Runs anywhere.
#define ATTN_ISA portable
#include "simd/portable.h"

namespace attn_cpu::portable {
constexpr int kMR = 4;
constexpr int64_t kQB = 64;  // query rows per task
constexpr int64_t kKB = 64;  // keys per block
constexpr int kNV = 2;
}  // namespace attn_cpu::portable

#include "kernels/gemm.h"
#include "kernels/isa.h"
#include "kernels/isa_common.h"

namespace attn_cpu {
namespace {
const char* fwd_path(DType) { return "portable/fp32"; }
const char* bwd_path(DType) { return "portable/fp32"; }
}  // namespace
const KernelSet kKernelsPortable{"portable", &portable::forward_entry, &portable::backward_entry, &fwd_path, &bwd_path};
}  // namespace attn_cpu
