// Which code each benched backend runs, so that runs on two machines can be told apart: the facts its
// buildInfo() gives (cpu-flash: the kernel asked for, the ISA it dispatched to, the kernel path per
// dtype and its thread budget; GPU backends: their build), picked for the bench's dtype for the header
// and kept whole in the JSON.
import type { Backend } from '@attn/core';

type BuildInfo = Record<string, string | number | boolean | readonly string[]>;
export type BuildFacts = BuildInfo | { error: string };

/** One backend's path for one dtype: only the facts its build states. */
export interface PathFacts {
  readonly kernel?: string;
  readonly isa?: string;
  readonly forward?: string;
  readonly backward?: string;
  readonly threads?: number;
}

/**
 * Each backend's buildInfo(), or the error it threw (never fails the bench). With `kernel` (--kernel),
 * the facts of calls that name it, from the backends that declare it.
 */
export function backendBuilds(backends: readonly Backend[], kernel: string | null = null): Record<string, BuildFacts> {
  const out: Record<string, BuildFacts> = {};
  for (const b of backends) {
    if (!b.buildInfo) continue;
    const declares = kernel !== null && (b.kernels ?? []).some((k) => k.name === kernel);
    try {
      out[b.name] = declares ? b.buildInfo(kernel) : b.buildInfo();
    } catch (e) {
      out[b.name] = { error: e instanceof Error ? e.message : String(e) };
    }
  }
  return out;
}

/** The kernel, ISA, forward and backward paths for `dtype`, and thread budget, of each backend that states any. */
export function pathFacts(builds: Record<string, BuildFacts>, dtype: string): Record<string, PathFacts> {
  const out: Record<string, PathFacts> = {};
  for (const [name, info] of Object.entries(builds)) {
    const fact = (key: string): unknown => (info as Record<string, unknown>)[key];
    const text = (key: string): string | undefined =>
      typeof fact(key) === 'string' ? (fact(key) as string) : undefined;
    const facts: PathFacts = {
      kernel: text('kernel'),
      isa: text('isa'),
      forward: text(`forward.${dtype}`),
      backward: text(`backward.${dtype}`),
      threads: typeof fact('threads') === 'number' ? (fact('threads') as number) : undefined,
    };
    const stated = Object.fromEntries(Object.entries(facts).filter(([, v]) => v !== undefined)) as PathFacts;
    if (Object.keys(stated).length > 0) out[name] = stated;
  }
  return out;
}

/** "cpu-flash: kernel auto, isa avx2, forward avx2/fp32, backward avx2/fp32, threads 2" per backend. */
export function pathLines(builds: Record<string, BuildFacts>, dtype: string): string[] {
  return Object.entries(pathFacts(builds, dtype)).map(
    ([name, f]) =>
      `${name}: ${Object.entries(f)
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(', ')}`,
  );
}
