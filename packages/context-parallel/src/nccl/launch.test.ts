// The launcher on any machine: ranks are plain node processes over dist/ (never the TypeScript
// sources this test runs on), and a rank that fails rejects the job with its output instead of
// hanging; the other ranks are killed at once, even when they would hang forever.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

interface Launcher {
  launchRing(
    size: number,
    job: unknown,
    options?: { timeoutMs?: number; script?: string },
  ): Promise<{ results: unknown[] }>;
}
const launcher = async () => (await import('../../scripts/ring-launch.mjs' as string)) as Launcher;
const FIXTURE = fileURLToPath(new URL('../../test/launch-fixture.mjs', import.meta.url));

describe('launchRing', () => {
  it('reports failing ranks with their output, without hanging', async () => {
    const { launchRing } = await launcher();
    const err = await launchRing(2, { mode: 'check', cases: [] }, { timeoutMs: 60_000 }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    if (err === null) return; // a host with 2 GPUs and the addon: the empty job succeeds
    expect(err.message).toMatch(/rank [01] exited/);
    // The child did not inherit the parent's --conditions @attn/source (it would try to load .ts).
    expect(err.message).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
  }, 90_000);

  it('kills the other ranks when one fails and reports the failing rank first', async () => {
    const { launchRing } = await launcher();
    const start = Date.now();
    const err = await launchRing(4, { failRank: 2 }, { timeoutMs: 120_000, script: FIXTURE }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).not.toBeNull();
    expect(Date.now() - start).toBeLessThan(30_000); // not the 120 s job timeout
    const parts = err!.message.split('\n---\n');
    expect(parts).toHaveLength(4);
    expect(parts[0]).toMatch(/^rank 2 exited 3:\nfixture rank 2: injected failure/);
    for (const p of parts.slice(1)) expect(p).toMatch(/^rank [013] exited SIGKILL \(killed: rank 2 failed\)/);
  }, 60_000);

  it('kills every rank at the job timeout', async () => {
    const { launchRing } = await launcher();
    const err = await launchRing(2, { failRank: -1 }, { timeoutMs: 1_500, script: FIXTURE }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/rank [01] exited SIGKILL \(killed: the job did not finish within 1500 ms/);
  }, 30_000);
});
