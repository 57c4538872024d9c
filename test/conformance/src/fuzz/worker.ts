// What the fuzz child process runs for each case (child.mjs loads this module). Results are plain
// data sent back over IPC; a throw here is a harness error, reported as such.
import { parseDevice } from '@attn/core';
import type { DeviceLike } from '@attn/core';
import type { CaseSpec } from '../cases.js';
import { runCase } from '../run-case.js';
import { checkInvalid, type InvalidCase } from './invalid.js';

export interface CaseResult {
  /** ok: matched the reference (or declined properly); fail: a wrong result or an improper decline. */
  readonly status: 'ok' | 'declined' | 'fail';
  readonly message: string;
}

export function runValid(backend: string, spec: CaseSpec, seed: bigint, device: DeviceLike): CaseResult {
  try {
    const outcome = runCase(backend, spec, seed, parseDevice(device));
    if (outcome.ran === 'declined') return { status: 'declined', message: outcome.reasons.join('; ') };
    const bad = outcome.verdicts.filter((v) => !v.ok);
    if (bad.length > 0) return { status: 'fail', message: `${outcome.ran}: ${bad.map((v) => v.message).join(' | ')}` };
    return { status: 'ok', message: outcome.ran };
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause;
    const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    const code = (e as { code?: unknown }).code;
    return {
      status: 'fail',
      message: `threw ${why}${code ? ` [${String(code)}]` : ''}${cause instanceof Error ? ` (cause: ${cause.message})` : ''}`,
    };
  }
}

export async function runInvalid(c: InvalidCase): Promise<CaseResult> {
  const problem = await checkInvalid(c);
  return problem === null ? { status: 'ok', message: 'coded error' } : { status: 'fail', message: problem };
}
