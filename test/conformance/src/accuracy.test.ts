import { describe, expect, it } from 'vitest';
import { judge, SLACK } from './accuracy.js';

const ref = Float64Array.from([1, -2, 0.5, -Infinity]);
const naive = Float64Array.from([1.01, -2, 0.5, -Infinity]); // naive error 0.01

describe('judge (the accuracy rule)', () => {
  it('passes an error up to 2x the naive error plus slack', () => {
    const slack = SLACK.float16 * 2; // max(1, max |ref|) = 2
    expect(judge('out', 'float16', Float64Array.from([1, -2.02 + slack / 2, 0.5, -Infinity]), ref, naive).ok).toBe(true);
  });

  it('fails beyond it and says where', () => {
    const v = judge('out', 'float16', Float64Array.from([1, -2.03, 0.5, -Infinity]), ref, naive);
    expect(v.ok).toBe(false);
    expect(v.message).toMatch(/out: .*error 3\.0+e-2 > bound .* worst \[1\]/);
  });

  it('never passes NaN, even where the bound is huge', () => {
    const loose = Float64Array.from([100, -2, 0.5, -Infinity]);
    expect(judge('out', 'bfloat16', Float64Array.from([1, NaN, 0.5, -Infinity]), ref, loose).ok).toBe(false);
  });

  it('requires the exact value where the reference is infinite (logsumexp -inf)', () => {
    const v = judge('logsumexp', 'float32', Float64Array.from([1, -2, 0.5, 0]), ref, ref);
    expect(v.ok).toBe(false);
    expect(v.message).toMatch(/infinite at \[3\]/);
  });

  it('fails when the naive implementation and the reference disagree grossly', () => {
    const wrong = Float64Array.from([3, -2, 0.5, -Infinity]);
    expect(judge('out', 'float64', ref, ref, wrong).message).toMatch(/one of the two is wrong/);
  });

  it('fails on a length mismatch', () => {
    expect(judge('dq', 'float32', ref.subarray(0, 3), ref, ref).ok).toBe(false);
  });
});
