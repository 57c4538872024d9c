// S = 8192 must run without an S x S buffer: cpu-math holds one query row's scores at a time. The
// peak resident memory of this (forked) test process may grow by far less than one [8192, 8192]
// float32 buffer (256 MiB) would take; small H and D keep the run short.
import { describe, expect, it } from 'vitest';
import { normal, runMath } from '../../test/math/helpers.js';

const MiB = 2 ** 20;

describe('memory', () => {
  it('S = 8192 forward and backward hold no S x S buffer', () => {
    const S = 8192;
    const D = 4;
    const q = normal([1, 1, S, D], 1);
    const k = normal([1, 1, S, D], 2);
    const v = normal([1, 1, S, D], 3);
    const rssBefore = process.memoryUsage().rss;
    const peakBefore = process.resourceUsage().maxRSS * 1024; // maxRSS is in KiB
    const run = runMath(q, k, v, { isCausal: true });
    const growth = process.resourceUsage().maxRSS * 1024 - Math.max(rssBefore, peakBefore);
    expect(growth / MiB, `peak resident memory grew by ${(growth / MiB).toFixed(1)} MiB`).toBeLessThan(96);

    // And the result is right where it is easy to know: causal row 0 sees key 0 only.
    const out = run.fwd.out.toFloat64Array();
    const vs = v.toFloat64Array();
    expect([...out.subarray(0, D)]).toEqual([...vs.subarray(0, D)]);
    const lse = run.fwd.logsumexp.toFloat64Array();
    const [qs, ks] = [q.toFloat64Array(), k.toFloat64Array()];
    const last = S - 1;
    const scores = Array.from({ length: S }, (_, j) => {
      let dot = 0;
      for (let d = 0; d < D; d++) dot += qs[last * D + d]! * ks[j * D + d]!;
      return dot / Math.sqrt(D);
    });
    const max = Math.max(...scores);
    const want = max + Math.log(scores.reduce((a, s) => a + Math.exp(s - max), 0));
    expect(lse[last]).toBeCloseTo(want, 5);
  });
});
