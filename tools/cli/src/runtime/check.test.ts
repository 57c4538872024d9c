import { describe, expect, it } from 'vitest';
import { errorStats } from './check.js';

describe('errorStats', () => {
  it('gives max, mean and relative absolute error', () => {
    const e = errorStats(Float64Array.of(1, 2.5, -3), Float64Array.of(1, 2, -4));
    expect(e.maxAbs).toBe(1);
    expect(e.meanAbs).toBeCloseTo(0.5);
    expect(e.maxRel).toBe(0.25);
  });

  it('lets NaN through rather than hiding it', () => {
    expect(errorStats(Float64Array.of(Number.NaN, 1), Float64Array.of(0, 1)).maxAbs).toBeNaN();
    expect(errorStats(Float64Array.of(1, Number.NaN), Float64Array.of(1, 0)).maxAbs).toBeNaN();
  });

  it('refuses outputs of another size', () => {
    expect(() => errorStats(new Float64Array(2), new Float64Array(3))).toThrow(RangeError);
  });
});
