// Suites that need hardware: run where it is, elsewhere skip with the reason printed (a skip is never
// a pass), and on the host meant to run them (requireEnv=1) fail with the reason instead.
import { describe, expect, it } from 'vitest';

/** Set to '1' on a GPU host: a CUDA suite that cannot run there fails instead of skipping. */
export const REQUIRE_GPU_ENV = 'ATTN_REQUIRE_GPU';

/**
 * describe(title, body) when `reason` is null; otherwise a skipped suite whose title says why, or,
 * with process.env[requireEnv] === '1', a failing test that says why.
 */
export function describeWhereRunnable(
  title: string,
  reason: string | null,
  body: () => void,
  requireEnv: string = REQUIRE_GPU_ENV,
): void {
  if (reason === null) {
    describe(title, body);
  } else if (process.env[requireEnv] === '1') {
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
