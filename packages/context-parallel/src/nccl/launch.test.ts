// The launcher on any machine: ranks are plain node processes over dist/ (never the TypeScript
// sources this test runs on), and a rank that fails rejects the job with its output instead of
// hanging. Here every rank fails (no GPUs, or no NCCL addon, or no dist/); what matters is how.
import { describe, expect, it } from 'vitest';

describe('launchRing', () => {
  it('reports failing ranks with their output, without hanging', async () => {
    const { launchRing } = (await import('../../scripts/ring-launch.mjs' as string)) as {
      launchRing(size: number, job: unknown, timeoutMs?: number): Promise<unknown>;
    };
    const err = await launchRing(2, { mode: 'check', cases: [] }, 60_000).then(
      () => null,
      (e: unknown) => e as Error,
    );
    if (err === null) return; // a host with 2 GPUs and the addon: the empty job succeeds
    expect(err.message).toMatch(/rank [01] exited/);
    // The child did not inherit the parent's --conditions @attn/source (it would try to load .ts).
    expect(err.message).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
  }, 90_000);
});
