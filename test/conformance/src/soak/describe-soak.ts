// describeSoak: the soak run as a vitest test, with the bounds it must stay within.
import { describe, expect, it } from 'vitest';
import { runSoak, type SoakOptions } from './soak.js';

/** Resident growth allowed between the warm-up and the end: far below what one leaked output per call would add. */
export const MAX_RSS_GROWTH_MIB = 48;

export function describeSoak(options: SoakOptions & { readonly timeoutMs?: number }): void {
  describe(`soak: mixed calls on '${options.backend}' (${options.device})`, () => {
    it(
      'memory stays flat, every failure is coded, no promise is left unhandled',
      { timeout: options.timeoutMs ?? 300_000 },
      async () => {
        const r = await runSoak(options);
        console.log(
          `soak '${options.backend}': ${r.calls} calls (${JSON.stringify(r.counts)}); rss ${r.rssWarmMiB.toFixed(1)} -> ${r.rssEndMiB.toFixed(1)} MiB` +
            (r.deviceBytesBefore === null
              ? ''
              : `; device bytes in use ${r.deviceBytesBefore} -> ${r.deviceBytesAfter}`),
        );
        expect(r.problems).toEqual([]);
        expect(r.rejectionEvents).toEqual([]);
        expect(r.rssEndMiB - r.rssWarmMiB, 'resident memory grew after the warm-up').toBeLessThan(MAX_RSS_GROWTH_MIB);
        if (r.deviceBytesBefore !== null)
          expect(r.deviceBytesAfter, 'device bytes in live buffers before and after').toBe(r.deviceBytesBefore);
      },
    );
  });
}
