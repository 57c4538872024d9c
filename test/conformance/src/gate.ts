// Suites that need hardware: run where it is, elsewhere skip with the reason printed (a skip is never
// a pass), and on the host meant to run them (requireEnv=1) fail with the reason instead.
import { envTestGate } from '@attn/core';
import { describe, expect, it } from 'vitest';

/** Set to '1' on a GPU host: a CUDA suite that cannot run there fails instead of skipping (core's TEST_ENV_FLAGS). */
export const REQUIRE_GPU_ENV = 'ATTN_REQUIRE_GPU';

/** The gates a hardware suite may name. */
export type RequireEnv = 'ATTN_REQUIRE_GPU' | 'ATTN_REQUIRE_ROCM';

/**
 * describe(title, body) when `reason` is null; otherwise a skipped suite whose title says why, or,
 * with the gate `requireEnv` set to 1, a failing test that says why.
 */
export function describeWhereRunnable(
  title: string,
  reason: string | null,
  body: () => void,
  requireEnv: RequireEnv = REQUIRE_GPU_ENV,
): void {
  if (reason === null) {
    describe(title, body);
  } else if (envTestGate(requireEnv)) {
    describe(title, () => {
      it(`runs (${requireEnv}=1)`, () => {
        expect.fail(`${title} cannot run: ${reason}`);
      });
    });
  } else {
    console.log(`${title} skipped: ${reason}`);
    describe.skip(`${title} (skipped: ${reason})`, () => {
      it('needs the device', () => {});
    });
  }
}
