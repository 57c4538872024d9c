// The conformance cases as a plain function, without vitest: what `attn check` runs on an installed
// backend (from a registry install, on any machine) against cpu-math with the same accuracy rule.
import { getBackend, parseDevice } from '@attn/core';
import type { DeviceLike } from '@attn/core';
import { buildCases } from './cases.js';
import type { CaseOptions } from './cases.js';
import { REFERENCE, runCase } from './run-case.js';
import type { Outcome } from './run-case.js';
import { baseSeed, caseSeed, SEED_ENV } from './seeds.js';

export interface CheckOptions extends CaseOptions {
  readonly device?: DeviceLike;
  readonly seed?: bigint | number;
  /** Called after each case (progress). */
  readonly onCase?: (name: string, result: CaseResult) => void;
}

export type CaseResult =
  | { readonly status: 'passed'; readonly ran: 'forward' | 'forward+backward' }
  | { readonly status: 'declined'; readonly reasons: readonly string[] }
  | { readonly status: 'failed'; readonly failures: readonly string[] };

export interface CheckReport {
  readonly backend: string;
  readonly seed: bigint;
  /** How to rerun exactly these inputs. */
  readonly rerun: string;
  readonly cases: readonly { readonly name: string; readonly result: CaseResult }[];
}

function resultOf(outcome: Outcome): CaseResult {
  if (outcome.ran === 'declined') return { status: 'declined', reasons: outcome.reasons };
  const failures = outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
  return failures.length > 0 ? { status: 'failed', failures } : { status: 'passed', ran: outcome.ran };
}

/** Runs every case on `backendName` (registered, as cpu-math must be); never throws for a failing case. */
export function checkBackend(backendName: string, options: CheckOptions = {}): CheckReport {
  const backend = getBackend(backendName);
  if (!backend) throw new Error(`backend '${backendName}' is not registered: import its package first`);
  if (!getBackend(REFERENCE)) throw new Error(`the reference '${REFERENCE}' is not registered: import '@attn/cpu'`);
  const device = parseDevice(options.device ?? backend.deviceType);
  const seed = baseSeed(options.seed);
  const cases = buildCases(options).map((spec, index) => {
    let result: CaseResult;
    try {
      result = resultOf(runCase(backendName, spec, caseSeed(seed, index), device));
    } catch (e) {
      result = { status: 'failed', failures: [`failed to run: ${e instanceof Error ? e.message : String(e)}`] };
    }
    options.onCase?.(spec.name, result);
    return { name: spec.name, result };
  });
  return { backend: backendName, seed, rerun: `${SEED_ENV}=${seed}`, cases };
}
