// Which code each benched backend runs, so that runs on two machines can be told apart: the facts its
// buildInfo() gives (cpu-flash: the ISA it dispatched to and the kernel path per dtype; GPU backends:
// their build), picked for the bench's dtype for the header and kept whole in the JSON.
import type { Backend } from '@attn/core';

type BuildInfo = Record<string, string | number | boolean | readonly string[]>;

/** Each backend's buildInfo(), or the error it threw (never fails the bench). */
export function backendBuilds(backends: readonly Backend[]): Record<string, BuildInfo | { error: string }> {
  const out: Record<string, BuildInfo | { error: string }> = {};
  for (const b of backends) {
    if (!b.buildInfo) continue;
    try {
      out[b.name] = b.buildInfo();
    } catch (e) {
      out[b.name] = { error: e instanceof Error ? e.message : String(e) };
    }
  }
  return out;
}

/** "cpu-flash: isa avx2, forward avx2/fp32, backward avx2/fp32" for the keys a build names for `dtype`. */
export function pathLines(builds: Record<string, BuildInfo | { error: string }>, dtype: string): string[] {
  const lines: string[] = [];
  for (const [name, info] of Object.entries(builds)) {
    const fact = (key: string): unknown => (info as Record<string, unknown>)[key];
    const facts = [
      ['isa', fact('isa')],
      ['forward', fact(`forward.${dtype}`)],
      ['backward', fact(`backward.${dtype}`)],
    ].filter(([, v]) => v !== undefined);
    if (facts.length > 0) lines.push(`${name}: ${facts.map(([k, v]) => `${k} ${String(v)}`).join(', ')}`);
  }
  return lines;
}
