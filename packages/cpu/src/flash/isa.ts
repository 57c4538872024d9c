// Which SIMD level cpu-flash runs: the backend's `isa` option, else ATTN_CPU_FLASH_ISA, else 'auto' (the
// fastest level this CPU runs: amx, avx512, avx2, portable; the addon's dispatch.cpp decides). The variable is
// the one run-time knob of cpu-flash besides ATTN_NUM_THREADS: it lets `attn bench` and the test suites run
// the AVX2 or portable kernels on an AVX-512 machine. Read here only, on each call.
import { AttnInputError } from '@attn/core';

export const CPU_FLASH_ISAS = ['auto', 'portable', 'avx2', 'avx512', 'avx512bf16', 'amx'] as const;
export type CpuFlashIsa = (typeof CPU_FLASH_ISAS)[number];

function isIsa(v: unknown): v is CpuFlashIsa {
  return (CPU_FLASH_ISAS as readonly unknown[]).includes(v);
}

/** The backend option's level; throws AttnInputError (ATTN_OPTION) for an unknown one. */
export function checkIsa(isa: unknown): CpuFlashIsa {
  if (!isIsa(isa)) {
    throw new AttnInputError('ATTN_OPTION', `cpu-flash: isa must be one of ${CPU_FLASH_ISAS.join(', ')}, got '${String(isa)}'.`);
  }
  return isa;
}

/**
 * ATTN_CPU_FLASH_ISA's level ('auto' when unset or empty); throws AttnInputError (ATTN_OPTION) for an unknown
 * one. A level this CPU cannot run is refused by the addon when a call asks for it.
 */
export function defaultIsa(env: NodeJS.ProcessEnv = process.env): CpuFlashIsa {
  const raw = env.ATTN_CPU_FLASH_ISA;
  if (raw === undefined || raw.trim() === '') return 'auto';
  if (!isIsa(raw)) {
    throw new AttnInputError('ATTN_OPTION', `ATTN_CPU_FLASH_ISA must be one of ${CPU_FLASH_ISAS.join(', ')}, got '${raw}'; unset it for 'auto'.`);
  }
  return raw;
}
