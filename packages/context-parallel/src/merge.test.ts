import { describe, expect, it } from 'vitest';
import { logAddExp, mergeInto } from './merge.js';

/** softmax-weighted sum of values over the given keys, and its lse, in float64. */
function attend(scores: number[], values: number[][]): { out: number[]; lse: number } {
  if (scores.length === 0) return { out: values[0] ? values[0].map(() => 0) : [0, 0], lse: -Infinity };
  const m = Math.max(...scores);
  const e = scores.map((s) => Math.exp(s - m));
  const z = e.reduce((a, b) => a + b, 0);
  const out = values[0]!.map((_, c) => e.reduce((a, w, j) => a + w * values[j]![c]!, 0) / z);
  return { out, lse: m + Math.log(z) };
}

describe('mergeInto', () => {
  it('merging the partials of a split key set gives the full row', () => {
    const scores = [0.3, -1.2, 2.5, 0.0, 1.1, -0.4, 3.0];
    const values = scores.map((_, j) => [Math.sin(j), Math.cos(3 * j)]);
    const full = attend(scores, values);
    for (const cuts of [[3], [1, 4], [2, 3, 6], [0, 7]]) {
      const acc = new Float64Array(2);
      const lse = new Float64Array([-Infinity]);
      let lo = 0;
      for (const hi of [...cuts, scores.length]) {
        const p = attend(scores.slice(lo, hi), values.slice(lo, hi));
        mergeInto(acc, lse, p.out, [p.lse], 2);
        lo = hi;
      }
      expect(lse[0]).toBeCloseTo(full.lse, 14);
      expect(acc[0]).toBeCloseTo(full.out[0]!, 14);
      expect(acc[1]).toBeCloseTo(full.out[1]!, 14);
    }
  });

  it('a row no partial saw stays out 0, lse -inf; -inf partials are the identity', () => {
    const acc = new Float64Array(4);
    const lse = new Float64Array([-Infinity, -Infinity]);
    mergeInto(acc, lse, [9, 9, 1, 2], [-Infinity, 0.5], 2);
    expect(Array.from(acc)).toEqual([0, 0, 1, 2]);
    expect(Array.from(lse)).toEqual([-Infinity, 0.5]);
    mergeInto(acc, lse, [7, 7, 7, 7], [-Infinity, -Infinity], 2);
    expect(Array.from(acc)).toEqual([0, 0, 1, 2]);
  });

  it('NaN in a partial makes the row NaN, and it stays NaN', () => {
    const acc = new Float64Array([1, 2]);
    const lse = new Float64Array([0.3]);
    mergeInto(acc, lse, [NaN, NaN], [NaN], 2);
    expect(Number.isNaN(lse[0])).toBe(true);
    expect(acc.every(Number.isNaN)).toBe(true);
    mergeInto(acc, lse, [1, 1], [5], 2);
    expect(Number.isNaN(lse[0])).toBe(true);
    expect(acc.every(Number.isNaN)).toBe(true);
    // A finite lse with NaN values (NaN in v) keeps the NaN in out.
    const acc2 = new Float64Array([1, 2]);
    const lse2 = new Float64Array([0]);
    mergeInto(acc2, lse2, [NaN, 3], [0], 2);
    expect(Number.isNaN(acc2[0])).toBe(true);
    expect(acc2[1]).toBeCloseTo(2.5, 14);
  });

  it('logAddExp is exact at the edges', () => {
    expect(logAddExp(-Infinity, -Infinity)).toBe(-Infinity);
    expect(logAddExp(-Infinity, 2)).toBe(2);
    expect(logAddExp(1000, 1000)).toBeCloseTo(1000 + Math.log(2), 10);
    expect(Number.isNaN(logAddExp(NaN, 1))).toBe(true);
  });
});
