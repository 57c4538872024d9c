import { describe, expect, it } from 'vitest';
import { median, quantile, summarize } from './stats.js';

describe('stats', () => {
  it('takes medians of odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('interpolates quantiles linearly', () => {
    const s = [0, 10, 20, 30, 40];
    expect(quantile(s, 0.2)).toBe(8);
    expect(quantile(s, 0.8)).toBe(32);
    expect(() => quantile([], 0.5)).toThrow(RangeError);
  });

  it('summarizes without reordering the input', () => {
    const samples = [5, 1, 4, 2, 3];
    const s = summarize(samples);
    expect(s).toMatchObject({ count: 5, medianMs: 3, minMs: 1, maxMs: 5 });
    expect(samples).toEqual([5, 1, 4, 2, 3]);
  });
});
