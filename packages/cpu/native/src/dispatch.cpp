#include "dispatch.h"

#include <stdexcept>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

namespace attn_cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAuto:
      return "auto";
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx512Bf16:
      return "avx512bf16";
    case Isa::kAmx:
      return "amx";
    case Isa::kNeon:
      return "neon";
    case Isa::kSve256:
      return "sve256";
  }
  return "?";
}

bool parse_isa(const std::string& s, Isa* out) {
  for (Isa i :
       {Isa::kAuto, Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx, Isa::kNeon, Isa::kSve256}) {
    if (s == isa_name(i)) {
      *out = i;
      return true;
    }
  }
  return false;
}

std::vector<Isa> compiled_isas() {
#if defined(__x86_64__)
  return {Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx};
#elif defined(__aarch64__)
#if defined(ATTN_CPU_SVE256)
  return {Isa::kPortable, Isa::kNeon, Isa::kSve256};
#else
  return {Isa::kPortable, Isa::kNeon};
#endif
#else
  return {Isa::kPortable};
#endif
}

#if defined(__x86_64__)
namespace {
// AMX-TILE and AMX-BF16 in CPUID leaf 7, and Linux's permission to use the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), asked for once per process.
bool amx_usable() {
  static const bool ok = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!(d & (1u << 22)) || !(d & (1u << 24))) return false;
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return ok;
}

// The CPU's vendor is AMD (CPUID leaf 0: "AuthenticAMD"). On AMD's AVX512-BF16 cores (Zen 4, Zen 5) vdpbf16ps
// issues at the FMA's rate, so the bf16 kernels on it beat widening bf16 to fp32; on Intel's (Cooper Lake, and
// Sapphire Rapids where AMX is not granted) it has a quarter of the FMA's throughput and loses (docs/perf/cpu.md).
bool amd_cpu() {
  static const bool amd = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    return b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "Auth" "enti" "cAMD"
  }();
  return amd;
}
}  // namespace
#endif

bool isa_runnable(Isa isa) {
  switch (isa) {
    case Isa::kAuto:
    case Isa::kPortable:
      return true;
#if defined(__x86_64__)
    // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("bmi2");
    case Isa::kAvx512:
      return isa_runnable(Isa::kAvx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    case Isa::kAvx512Bf16:
      return isa_runnable(Isa::kAvx512) && __builtin_cpu_supports("avx512bf16");
    case Isa::kAmx:
      return isa_runnable(Isa::kAvx512Bf16) && amx_usable();
    default:
      return false;
#elif defined(__aarch64__)
    // Advanced SIMD is part of the AArch64 base architecture; Linux reports it in HWCAP all the same.
    case Isa::kNeon:
#if defined(__linux__)
      return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
      return true;
#endif
    // Built for a fixed 256-bit vector length: SVE present and this thread's length 32 bytes (a
    // process may lower it with prctl; the kernels' threads inherit the length of the thread that
    // started the pool, normally the main thread's).
    case Isa::kSve256:
#if defined(__linux__) && defined(ATTN_CPU_SVE256)
      return (getauxval(AT_HWCAP) & HWCAP_SVE) != 0 && (prctl(PR_SVE_GET_VL) & PR_SVE_VL_LEN_MASK) == 32;
#else
      return false;
#endif
    default:
      return false;
#else
    default:
      return false;
#endif
  }
  return false;
}

// 'auto': AMX, else (AMD only) AVX512-BF16, else AVX-512, AVX2, NEON, portable. The two bf16 levels differ from
// avx512 in their bf16 kernels alone (fp32 and fp16 run the avx512 ones on every level).
Isa best_isa() {
  static const Isa best = [] {
#if defined(__x86_64__)
    const bool bf16_dot_fast = amd_cpu();
#else
    const bool bf16_dot_fast = false;
#endif
    for (Isa i : {Isa::kAmx, Isa::kAvx512Bf16, Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
      if (i == Isa::kAvx512Bf16 && !bf16_dot_fast) continue;
      if (isa_runnable(i)) return i;
    }
    return Isa::kPortable;
  }();
  return best;
}

const KernelSet& kernels_for(Isa requested) {
  const Isa isa = requested == Isa::kAuto ? best_isa() : requested;
  if (!isa_runnable(isa)) {
    throw std::invalid_argument(
        std::string("SIMD level '") + isa_name(isa) +
        "' cannot run on this CPU (or was not compiled in); use 'auto' or one of buildInfo().runnableIsas");
  }
  switch (isa) {
#if defined(__x86_64__)
    case Isa::kAvx2:
      return kKernelsAvx2;
    case Isa::kAvx512:
      return kKernelsAvx512;
    case Isa::kAvx512Bf16:
      return kKernelsAvx512Bf16;
    case Isa::kAmx:
      return kKernelsAmx;
#endif
#if defined(__aarch64__)
    case Isa::kNeon:
      return kKernelsNeon;
#endif
#if defined(ATTN_CPU_SVE256)
    case Isa::kSve256:
      return kKernelsSve256;
#endif
    default:
      return kKernelsPortable;
  }
}

}  // namespace attn_cpu
