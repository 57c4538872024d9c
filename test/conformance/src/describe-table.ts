// describeCaseTable: a backend's own list of cases (shapes and kernels its package wants covered
// beyond the shared list), each run through the conformance harness: the same inputs, reference,
// accuracy rule, poisoned outputs and deterministic-mode reproducibility as describeConformance.
// Unlike the shared list, every case of a table must run (a decline fails with the rules' reasons),
// except those that name the rule that must decline them.
import { getBackend, parseDevice } from '@attn/core';
import type { DeviceLike } from '@attn/core';
import { expect, it } from 'vitest';
import type { CaseSpec } from './cases.js';
import { REFERENCE, runCase } from './run-case.js';
import type { Launch } from './run-case.js';
import { baseSeed, caseSeed, SEED_ENV } from './seeds.js';

export interface TableCase extends CaseSpec {
  /** The backend's own entry points for this case (a kernel forced by name, ...); default sdpa's. */
  readonly launch?: Launch;
  /** Run the forward only (the backend's own forward on core's params), where the backward has its own table. */
  readonly forwardOnly?: boolean;
  /** The case is one the backend must decline, by this rule (a proper decline: reasons, NoBackendError). */
  readonly declinedBy?: string;
}

export interface TableOptions {
  /** The device the inputs live on; default the backend's device type, index 0. */
  readonly device?: DeviceLike;
  /** Base seed; default ATTN_CONFORMANCE_SEED, else a fresh random one per run (printed on failure). */
  readonly seed?: bigint | number;
}

/** One `it` per case, inside the caller's describe. */
export function describeCaseTable(backendName: string, cases: readonly TableCase[], options: TableOptions = {}): void {
  const seed = baseSeed(options.seed);
  const rerun = `base seed ${seed} (rerun with ${SEED_ENV}=${seed})`;
  const names = new Set<string>();
  cases.forEach((spec, index) => {
    if (names.has(spec.name)) throw new Error(`two cases named '${spec.name}'`);
    names.add(spec.name);
    it(spec.name, () => {
      const backend = getBackend(backendName);
      if (!backend) throw new Error(`'${backendName}' is not registered: import its package in the test file`);
      if (!getBackend(REFERENCE))
        throw new Error(`the reference '${REFERENCE}' is not registered: import '@attn/cpu' in the test file`);
      const device = parseDevice(options.device ?? backend.deviceType);
      const { launch, forwardOnly, declinedBy, ...plain } = spec;
      const forwardLaunch: Launch | undefined = forwardOnly
        ? { forward: launch?.forward ?? ((p) => backend.forward(p)) }
        : launch;
      const outcome = runCase(backendName, plain, caseSeed(seed, index), device, forwardLaunch);
      if (declinedBy !== undefined) {
        const reasons = outcome.ran === 'declined' ? outcome.reasons : [];
        expect(
          reasons.some((r) => r.startsWith(`${declinedBy}`)),
          `${spec.name} must be declined by ${declinedBy}; ${outcome.ran}: ${reasons.join('; ')}`,
        ).toBe(true);
        return;
      }
      if (outcome.ran === 'declined')
        expect.fail(`'${backendName}' declined ${spec.name}, ${rerun}: ${outcome.reasons.join('; ')}`);
      const failed = outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
      expect(failed, `${spec.name} (${outcome.ran}), ${rerun}:\n  ${failed.join('\n  ')}`).toEqual([]);
    });
  });
}
