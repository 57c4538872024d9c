// The drivers' trace marks: one waiting/resumed pair around every await on the transport, in order,
// with the channel and step the schedule gives (forward: R-1 K/V waits; backward: R-1 K/V waits and
// R accumulator waits, the last one the hop that brings each block's dK/dV home). Per rank, on an
// in-process ring.
import '@attn/cpu';
import { randn } from '@attn/core';
import type { Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { ringBackward } from './backward.js';
import { ringForward } from './forward.js';
import { shardLayout } from './layout.js';
import { LoopbackRing } from './loopback.js';
import { shardTensor } from './shard.js';
import { tracedWait, type RingTrace } from './trace.js';

type Mark = [point: 'waiting' | 'resumed', channel: string, step: number];

function recorder(): { trace: RingTrace; marks: Mark[] } {
  const marks: Mark[] = [];
  return {
    marks,
    trace: {
      waiting: (channel, step) => marks.push(['waiting', channel, step]),
      resumed: (channel, step) => marks.push(['resumed', channel, step]),
    },
  };
}

describe('ring trace', () => {
  for (const ranks of [2, 3]) {
    it(`R=${ranks}: a waiting/resumed pair around each transfer the driver awaits`, async () => {
      const seq = 13;
      const layout = shardLayout('zigzag', seq, ranks);
      const [q, k, v, g] = [0, 1, 2, 3].map(() => randn([1, 2, seq, 8]));
      const [qs, ks, vs, gs] = [q, k, v, g].map((t) => shardTensor(t!, layout)) as Tensor[][][];
      const ring = new LoopbackRing(ranks);
      const recs = Array.from({ length: ranks }, recorder);
      await Promise.all(
        recs.map(async (rec, r) => {
          const shard = { q: qs![r]!, k: ks![r]!, v: vs![r]! };
          const opts = { layout, isCausal: true, trace: rec.trace };
          const fwd = await ringForward(ring.endpoint(r), shard, opts);
          await ringBackward(ring.endpoint(r), shard, fwd, gs![r]!, opts);
        }),
      );
      const pair = (channel: string, step: number): Mark[] => [
        ['waiting', channel, step],
        ['resumed', channel, step],
      ];
      const steps = (n: number, from = 0) => Array.from({ length: n }, (_, i) => i + from);
      const forward = steps(ranks - 1).flatMap((s) => pair('kv', s));
      // Backward step s: the accumulators of the block in hand (s >= 1), then the next K/V block (s < R-1).
      const backward = [
        ...steps(ranks).flatMap((s) => [...(s > 0 ? pair('grad', s) : []), ...(s < ranks - 1 ? pair('kv', s) : [])]),
        ...pair('grad', ranks),
      ];
      for (const rec of recs) expect(rec.marks).toEqual([...forward, ...backward]);
    });
  }

  it('marks resumed when the awaited transfer fails, and passes the failure on', async () => {
    const rec = recorder();
    const failure = new Error('peer gone');
    await expect(tracedWait(rec.trace, 'kv', 4, Promise.reject(failure))).rejects.toBe(failure);
    expect(rec.marks).toEqual([
      ['waiting', 'kv', 4],
      ['resumed', 'kv', 4],
    ]);
  });
});
