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
    expect(v.message).toMatch(/reference is infinite \(-Infinity\) at \[3\]/);
  });

  it('fails when the naive implementation and the reference disagree grossly', () => {
    const wrong = Float64Array.from([3, -2, 0.5, -Infinity]);
    expect(judge('out', 'float64', ref, ref, wrong).message).toMatch(/one of the two is wrong/);
  });

  it('fails on a length mismatch', () => {
    expect(judge('dq', 'float32', ref.subarray(0, 3), ref, ref).ok).toBe(false);
  });

  it('requires NaN exactly where the reference is NaN (NaN in, NaN out)', () => {
    const refNaN = Float64Array.from([1, NaN, 0.5, -Infinity]);
    expect(judge('out', 'float32', Float64Array.from([1, NaN, 0.5, -Infinity]), refNaN, ref, { poisoned: true }).ok).toBe(true);
    // A NaN row disguised as fully masked: the lse of defect 2.
    const v = judge('logsumexp', 'float32', Float64Array.from([1, -Infinity, 0.5, -Infinity]), refNaN, ref, { poisoned: true });
    expect(v.message).toMatch(/reference is NaN at \[1\]/);
  });

  it('extraNaN allows NaN where the reference is finite, never a number where it is NaN', () => {
    const refNaN = Float64Array.from([1, NaN, 0.5, 2]);
    expect(judge('dk', 'float32', Float64Array.from([NaN, NaN, 0.5, 2]), refNaN, refNaN, { extraNaN: true, poisoned: true }).ok).toBe(true);
    expect(judge('dk', 'float32', Float64Array.from([1, 0, 0.5, 2]), refNaN, refNaN, { extraNaN: true, poisoned: true }).ok).toBe(false);
  });
});
