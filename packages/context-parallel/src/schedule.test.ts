import { describe, expect, it } from 'vitest';
import { shardLayout } from './layout.js';
import { blockKind, ringSchedule, ringSource, taskPairs } from './schedule.js';

/** Every visible (query, key) pair of the sequence, counted by brute force from positions. */
function visiblePairs(S: number, causal: boolean): number {
  return causal ? (S * (S + 1)) / 2 : S * S;
}

describe('ring schedule', () => {
  it('step s holds the block of rank (r - s) mod R, each block once per rank', () => {
    for (const R of [1, 2, 3, 4]) {
      for (let r = 0; r < R; r++) {
        const seen = Array.from({ length: R }, (_, s) => ringSource(r, s, R));
        expect(seen[0]).toBe(r);
        expect(new Set(seen).size).toBe(R);
        // what r holds at step s+1 is what r-1 held at step s (it was sent on)
        for (let s = 0; s + 1 < R; s++) expect(ringSource(r, s + 1, R)).toBe(ringSource((r - 1 + R) % R, s, R));
      }
    }
  });

  it('classifies blocks from positions: full, diagonal-causal, skip', () => {
    const c = (start: number, length: number, index = 0) => ({ index, start, length });
    expect(blockKind(c(10, 5), c(0, 5), true)).toBe('full');
    expect(blockKind(c(10, 5), c(6, 5), true)).toBe('full'); // last key 10 <= first query 10
    expect(blockKind(c(0, 5), c(10, 5), true)).toBe('skip');
    expect(blockKind(c(4, 3), c(4, 3), true)).toBe('causal');
    expect(blockKind(c(4, 3), c(4, 3), false)).toBe('full');
    expect(blockKind(c(4, 0), c(0, 3), false)).toBe('skip');
    expect(() => blockKind(c(4, 4), c(6, 4), true)).toThrow(expect.objectContaining({ code: 'ATTN_CP_LAYOUT' }));
  });

  for (const kind of ['contiguous', 'zigzag'] as const) {
    for (const causal of [true, false]) {
      it(`${kind}${causal ? ', causal' : ''}: the tasks cover every visible pair exactly once`, () => {
        for (const [R, S] of [
          [2, 16],
          [3, 17],
          [4, 1000],
          [4, 5],
        ] as const) {
          const layout = shardLayout(kind, S, R);
          const sched = ringSchedule(layout, causal);
          const total = sched.reduce((n, steps, r) => n + steps.reduce((m, st) => m + taskPairs(layout, r, st), 0), 0);
          expect(total).toBe(visiblePairs(S, causal));
          // No (query chunk, key chunk) pair twice.
          const pairs = new Set<string>();
          sched.forEach((steps, r) =>
            steps.forEach((st) =>
              st.tasks.forEach((t) => {
                const key = `${layout.chunksOf(r)[t.qi]!.index}:${layout.chunksOf(st.source)[t.ki]!.index}`;
                expect(pairs.has(key)).toBe(false);
                pairs.add(key);
              }),
            ),
          );
        }
      });
    }
  }

  it('zigzag balances causal work across ranks (contiguous does not)', () => {
    const work = (kind: 'zigzag' | 'contiguous') => {
      const layout = shardLayout(kind, 4096, 4);
      return ringSchedule(layout, true).map((steps, r) => steps.reduce((n, st) => n + taskPairs(layout, r, st), 0));
    };
    const z = work('zigzag');
    expect(Math.max(...z) / Math.min(...z)).toBeLessThan(1.001);
    const c = work('contiguous');
    expect(Math.max(...c) / Math.min(...c)).toBeGreaterThan(5);
  });
});
