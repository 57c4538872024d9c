// The work a ring call does: per rank and step, one local forward per block task in the forward and
// one sdpaBackwardFrom per block task in the backward (Ring Attention's cost), nothing else. Counted
// on a backend that wraps cpu-math and records every entry it serves.
import '@attn/cpu';
import type { Backend, Tensor } from '@attn/core';
import { getBackend, randn, registerBackend, unregisterBackend } from '@attn/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ringBackward } from './backward.js';
import { ringForward } from './forward.js';
import { LoopbackRing } from './loopback.js';
import { ringAttentionLoopback } from './loopback-run.js';
import { shardLayout } from './layout.js';
import { stepTasks } from './schedule.js';
import { shardTensor } from './shard.js';
import type { RingTransport } from './transport.js';

const counts = { forward: 0, backward: 0, backwardFrom: 0 };

beforeAll(() => {
  const math = getBackend('cpu-math')!;
  const counting: Backend = {
    ...math,
    name: 'counting-cpu-math',
    forward: (p) => {
      counts.forward++;
      return math.forward(p);
    },
    backward: (p, s, g) => {
      counts.backward++;
      return math.backward!(p, s, g);
    },
    backwardFrom: {
      run: (p, s, g) => {
        counts.backwardFrom++;
        return math.backwardFrom!.run(p, s, g);
      },
    },
  };
  registerBackend(counting, { priority: -1 });
});
afterAll(() => unregisterBackend('counting-cpu-math'));

function tasksOf(ranks: number, seq: number, layout: 'zigzag' | 'contiguous', causal: boolean): number {
  const l = shardLayout(layout, seq, ranks);
  let n = 0;
  for (let r = 0; r < ranks; r++) for (let s = 0; s < ranks; s++) n += stepTasks(l, r, s, causal).tasks.length;
  return n;
}

describe('ring work count', () => {
  for (const [ranks, layout, causal] of [
    [2, 'zigzag', true],
    [3, 'zigzag', false],
    [4, 'contiguous', true],
  ] as const) {
    it(`R=${ranks} ${layout}${causal ? ' causal' : ''}: one forward and one backwardFrom per block task`, async () => {
      const seq = 23;
      const q = randn([1, 2, seq, 8]);
      const k = randn([1, 2, seq, 8]);
      const v = randn([1, 2, seq, 8]);
      const gradOut = randn([1, 2, seq, 8]);
      Object.assign(counts, { forward: 0, backward: 0, backwardFrom: 0 });
      await ringAttentionLoopback(q, k, v, {
        ranks,
        layout,
        isCausal: causal,
        gradOut,
        backends: ['counting-cpu-math'],
      });
      const tasks = tasksOf(ranks, seq, layout, causal);
      expect(tasks).toBeGreaterThan(0);
      expect(counts).toEqual({ forward: tasks, backward: 0, backwardFrom: tasks });
    });
  }
});

describe('ring backward order', () => {
  // The hop home is the one transfer no later step hides: the later half of the rank's own-block tasks
  // runs after the last step's accumulator send, while that hop travels (backward.ts). Each rank runs on
  // its own logging backend, so the log tells whose backward ran when; ranks interleave only at awaits.
  const ranks = 3;
  const log: string[] = [];
  beforeAll(() => {
    const math = getBackend('cpu-math')!;
    for (let r = 0; r < ranks; r++) {
      registerBackend(
        {
          ...math,
          name: `logging-rank-${r}`,
          backwardFrom: {
            run: (p, s, g) => {
              log.push(`r${r} bwd`);
              return math.backwardFrom!.run(p, s, g);
            },
          },
        },
        { priority: -1 },
      );
    }
  });
  afterAll(() => {
    for (let r = 0; r < ranks; r++) unregisterBackend(`logging-rank-${r}`);
  });

  it('zigzag causal R=3: the held-back own-block task runs after the last accumulator send', async () => {
    const seq = 30;
    const layout = shardLayout('zigzag', seq, ranks);
    const [q, k, v, g] = [0, 1, 2, 3].map(() => randn([1, 2, seq, 8]));
    const [qs, ks, vs, gs] = [q, k, v, g].map((t) => shardTensor(t!, layout)) as Tensor[][][];
    const ring = new LoopbackRing(ranks);
    await Promise.all(
      Array.from({ length: ranks }, async (_, r) => {
        const inner = ring.endpoint(r);
        const endpoint: RingTransport = {
          rank: inner.rank,
          size: inner.size,
          sendRecv: (channel, blocks, incoming) => {
            log.push(`r${r} send ${channel}`);
            return inner.sendRecv(channel, blocks, incoming);
          },
        };
        const shard = { q: qs![r]!, k: ks![r]!, v: vs![r]! };
        const opts = { layout, isCausal: true, backends: [`logging-rank-${r}`] };
        const fwd = await ringForward(endpoint, shard, opts);
        log.push(`r${r} backward`);
        await ringBackward(endpoint, shard, fwd, gs![r]!, opts);
      }),
    );
    for (let r = 0; r < ranks; r++) {
      // Own block: (early, early) causal, (late, early) full, (late, late) causal; the last one is held back.
      expect(stepTasks(layout, r, 0, true).tasks).toHaveLength(3);
      const mine = log.slice(log.indexOf(`r${r} backward`)).filter((e) => e.startsWith(`r${r} `));
      const lastSend = mine.lastIndexOf(`r${r} send grad`);
      expect(mine.filter((e) => e === `r${r} send grad`)).toHaveLength(ranks);
      expect(mine.slice(lastSend + 1)).toEqual([`r${r} bwd`]);
      // Step 0 runs the other two own tasks between the first K/V send and the first accumulator send.
      expect(mine.slice(1, 5)).toEqual([`r${r} send kv`, `r${r} bwd`, `r${r} bwd`, `r${r} send grad`]);
    }
  });
});
