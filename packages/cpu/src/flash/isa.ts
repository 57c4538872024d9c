// Which SIMD level cpu-flash runs. Each level but 'auto' is one of the backend's kernels (the `kernel`
// call option: `sdpa(q, k, v, { kernel: 'avx2' })` runs the AVX2 kernels on an AVX-512 machine, for
// benchmarks and A/B runs); without it, the backend's `isa` option, else 'auto' (the fastest level this
// CPU runs: amx, then avx512bf16 on AMD CPUs, avx512, avx2 on x86-64, neon on arm64, else portable; the addon's
// dispatch.cpp decides).
import { AttnInputError, type KernelChoice } from '@attn/core';

export const CPU_FLASH_ISAS = ['auto', 'portable', 'avx2', 'avx512', 'avx512bf16', 'amx', 'neon', 'sve256'] as const;
export type CpuFlashIsa = (typeof CPU_FLASH_ISAS)[number];

function isIsa(v: unknown): v is CpuFlashIsa {
  return (CPU_FLASH_ISAS as readonly unknown[]).includes(v);
}

/** The backend option's level; throws AttnInputError (ATTN_OPTION) for an unknown one. */
export function checkIsa(isa: unknown): CpuFlashIsa {
  if (!isIsa(isa)) {
    throw new AttnInputError(
      'ATTN_OPTION',
      `cpu-flash: isa must be one of ${CPU_FLASH_ISAS.join(', ')}, got '${String(isa)}'.`,
    );
  }
  return isa;
}

const DESCRIPTIONS: Readonly<Record<Exclude<CpuFlashIsa, 'auto'>, string>> = {
  portable: 'plain C++ micro-kernels (any x86-64 or arm64 CPU)',
  avx2: 'AVX2 + FMA micro-kernels, fp32 accumulation (Haswell and newer)',
  avx512: 'AVX-512F micro-kernels, fp32 accumulation (Skylake-X and newer)',
  avx512bf16:
    'bf16 products on vdpbf16ps (AVX512-BF16; bf16 forward and backward, others run avx512); auto picks it on AMD CPUs (Zen 4 and newer), not on Intel ones (vdpbf16ps at a quarter of the FMA rate there)',
  amx: 'bf16 tiles on AMX (Sapphire Rapids and newer; bf16 forward and backward, others run avx512)',
  neon: 'Advanced SIMD (NEON) micro-kernels, fp32 accumulation (every arm64 CPU; bf16 and fp16 widened to fp32)',
  sve256:
    'SVE micro-kernels for 256-bit vectors (Neoverse V1, Graviton3); never picked by auto (not yet timed against neon)',
};

/**
 * The kernels the `kernel` option may name: every level but 'auto'. `runnable` says which levels this
 * binary holds and this CPU runs (null: the addon is not loaded; availability reports why).
 */
export function isaKernels(runnable: () => readonly string[] | null): KernelChoice[] {
  return (Object.keys(DESCRIPTIONS) as Array<keyof typeof DESCRIPTIONS>).map((name) => ({
    name,
    description: DESCRIPTIONS[name],
    check() {
      const r = runnable();
      if (r === null || r.includes(name)) return null;
      return `this CPU or binary does not run ${name} (runnable here: ${r.join(', ')})`;
    },
  }));
}
