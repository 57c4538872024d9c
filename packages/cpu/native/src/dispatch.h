// Which SIMD level runs: what was compiled in, what this CPU can run, and the pick for a call.
#pragma once
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "problem.h"

namespace attn_cpu {

const char* isa_name(Isa isa);
// "auto", "portable", "avx2", "avx512", "avx512bf16", "amx", "neon", "sve256" -> Isa; false when unknown.
bool parse_isa(const std::string& s, Isa* out);
// Compiled into this binary / runnable on this CPU (compiled and supported by CPU and OS).
std::vector<Isa> compiled_isas();
bool isa_runnable(Isa isa);
// The level 'auto' runs: the fastest measured that this CPU runs: amx, avx512, avx2 (x86-64), neon (arm64), portable (a
// call's `isa`, from the `kernel` call option or the backend's `isa` option in src/flash/isa.ts, forces another). avx512bf16 (bf16 on
// vdpbf16ps) runs only when asked for: on Sapphire Rapids it is slower than converting to fp32. So
// does sve256 (arm64 with 256-bit SVE): it has only run under emulation, never been timed against neon.
Isa best_isa();
// The kernels for a requested level (kAuto = best_isa()). Throws std::invalid_argument when the
// level is not runnable here.
const KernelSet& kernels_for(Isa requested);

}  // namespace attn_cpu
