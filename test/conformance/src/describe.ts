// describeConformance: the vitest suite a backend package's test file calls. One test per case, then
// one that fails when too few cases ran (a backend that supports nothing must not pass vacuously).
import { getBackend, parseDevice } from '@attn/core';
import type { DeviceLike } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { buildCases } from './cases.js';
import type { CaseOptions } from './cases.js';
import { buildKvCacheCases, runKvCacheCase } from './kv-cache.js';
import { REFERENCE, runCase } from './run-case.js';
import type { Outcome } from './run-case.js';
import { baseSeed, caseSeed, SEED_ENV } from './seeds.js';
import { describeWhereRunnable } from './gate.js';
import type { RequireEnv } from './gate.js';

export interface ConformanceOptions extends CaseOptions {
  /** The device the backend's inputs live on; default the backend's device type, index 0. */
  readonly device?: DeviceLike;
  /** At least this many cases must run (default 12). */
  readonly minCases?: number;
  /** Base seed; default ATTN_CONFORMANCE_SEED, else a fresh random one per run (printed on failure). */
  readonly seed?: bigint | number;
}

export function describeConformance(backendName: string, options: ConformanceOptions = {}): void {
  const cases = buildCases(options);
  const seed = baseSeed(options.seed);
  const rerun = `base seed ${seed} (rerun with ${SEED_ENV}=${seed})`;
  const minCases = options.minCases ?? 12;
  const tally = { forward: 0, backward: 0, declined: new Map<string, number>() };

  describe(`conformance of '${backendName}' against ${REFERENCE}`, () => {
    const backend = () => {
      const b = getBackend(backendName);
      if (!b) throw new Error(`'${backendName}' is not registered: import its package in the test file`);
      if (!getBackend(REFERENCE))
        throw new Error(`the reference '${REFERENCE}' is not registered: import '@attn/cpu' in the test file`);
      return b;
    };

    cases.forEach((spec, index) => {
      it(spec.name, () => {
        const device = parseDevice(options.device ?? backend().deviceType);
        let outcome: Outcome;
        try {
          outcome = runCase(backendName, spec, caseSeed(seed, index), device);
        } catch (e) {
          throw new Error(`${spec.name} failed to run, ${rerun}: ${e instanceof Error ? e.message : String(e)}`, {
            cause: e,
          });
        }
        if (outcome.ran === 'declined') {
          for (const r of outcome.reasons) tally.declined.set(r, (tally.declined.get(r) ?? 0) + 1);
          return;
        }
        tally.forward++;
        if (outcome.ran === 'forward+backward') tally.backward++;
        const failed = outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
        expect(failed, `${spec.name} (${outcome.ran}), ${rerun}:\n  ${failed.join('\n  ')}`).toEqual([]);
      });
    });

    // sdpaKvCache: append, rotary and attention over the cache, against cpu-math on the gathered keys.
    buildKvCacheCases().forEach((spec, index) => {
      it(spec.name, () => {
        const device = parseDevice(options.device ?? backend().deviceType);
        let outcome;
        try {
          outcome = runKvCacheCase(backendName, spec, caseSeed(seed, cases.length + index), device);
        } catch (e) {
          throw new Error(`${spec.name} failed to run, ${rerun}: ${e instanceof Error ? e.message : String(e)}`, {
            cause: e,
          });
        }
        if (!outcome.ran) {
          for (const r of outcome.reasons) tally.declined.set(r, (tally.declined.get(r) ?? 0) + 1);
          return;
        }
        tally.forward++;
        const failed = outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
        expect(failed, `${spec.name}, ${rerun}:\n  ${failed.join('\n  ')}`).toEqual([]);
      });
    });

    it(`ran at least ${minCases} of ${cases.length} cases`, () => {
      const declined = [...tally.declined].map(([r, n]) => `  ${n} x ${r}`).join('\n');
      expect(
        tally.forward,
        `'${backendName}' ran ${tally.forward} cases (${tally.backward} with backward); declines:\n${declined}`,
      ).toBeGreaterThanOrEqual(minCases);
    });
  });
}

export interface GatedConformance extends ConformanceOptions {
  /** Why the backends cannot run here (no device, no build), or null when they can. */
  readonly reason: string | null;
  /** The gate that, set to '1', turns the skip into a failure (on the host meant to run it). */
  readonly requireEnv: RequireEnv;
  /** What the suite needs, for the skipped test's title: 'a ROCm device and a CK build of this addon'. */
  readonly needs: string;
}

/**
 * describeConformance for each backend where it can run; elsewhere a skip that prints the reason (a
 * skip is never a pass), or, with `requireEnv` set to '1', a failure that says why it could not run.
 */
export function describeConformanceWhereRunnable(names: readonly string[], gate: GatedConformance): void {
  const { reason, requireEnv, needs, ...options } = gate;
  for (const name of names) {
    describeWhereRunnable(
      `conformance of '${name}' (needs ${needs})`,
      reason,
      () => describeConformance(name, options),
      requireEnv,
    );
  }
}
