// The work a ring call does: per rank and step, one local forward per block task in the forward and
// one sdpaBackwardFrom per block task in the backward (Ring Attention's cost), nothing else. Counted
// on a backend that wraps cpu-math and records every entry it serves.
import '@attn/cpu';
import type { Backend } from '@attn/core';
import { getBackend, randn, registerBackend, unregisterBackend } from '@attn/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardLayout } from './layout.js';
import { ringAttentionLoopback } from './loopback-run.js';
import { stepTasks } from './schedule.js';

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
