// forwardAsync runs the kernel off the event loop: a timer keeps firing during a large call.
import { describe, expect, it } from 'vitest';
import { createCpuFlashBackend } from './backend.js';
import { addon } from './native.js';
import { maxAbsDiff, params } from './testing.js';

const load = addon();

describe.skipIf(!load.ok)('cpu-flash forwardAsync', () => {
  it('keeps the event loop turning during a large call, and matches the sync result', async () => {
    const b = createCpuFlashBackend({ threads: 1, isa: 'portable' });
    const p = params({ B: 1, Hq: 4, Hk: 4, Sq: 1024, Sk: 1024, D: 64, Dv: 64 }, 'float32');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    const result = await b.forwardAsync!(p);
    const ms = performance.now() - t0;
    clearInterval(timer);
    // A blocked loop would see at most one tick; a free one about one per millisecond.
    expect(ms).toBeGreaterThan(20);
    expect(ticks).toBeGreaterThan(Math.min(10, ms / 4));
    expect(maxAbsDiff(result.out, b.forward(p).out)).toBe(0);
  });

  it('runs several calls at once', async () => {
    const b = createCpuFlashBackend({ threads: 2 });
    const ps = [1, 2, 3].map((seed) =>
      params({ B: 1, Hq: 2, Hk: 2, Sq: 200, Sk: 300, D: 32, Dv: 32 }, 'float32', {}, seed),
    );
    const outs = await Promise.all(ps.map((p) => b.forwardAsync!(p)));
    outs.forEach((o, i) => expect(maxAbsDiff(o.out, b.forward(ps[i]!).out)).toBe(0));
  });
});
