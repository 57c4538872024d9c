// The fuzz suite's run-share floor (describe-fuzz.ts, runFloor): a binomial lower bound, so that a
// healthy small slice (a compute-sanitizer run of 30 cases) passes and a backend that runs nothing
// fails wherever the slice is large enough to tell.
import { describe, expect, it } from 'vitest';
import { RUN_SHARE_ALPHA, runFloor } from './describe-fuzz.js';

/** P(X < k) for X ~ Binomial(n, p), summed directly (small n only). */
function below(n: number, p: number, k: number): number {
  let sum = 0;
  let choose = 1;
  for (let j = 0; j < k; j++) {
    sum += choose * p ** j * (1 - p) ** (n - j);
    choose = (choose * (n - j)) / (j + 1);
  }
  return sum;
}

describe('runFloor', () => {
  it('is the largest count a backend with that run share falls below with probability at most alpha', () => {
    for (const [n, p] of [
      [30, 0.3],
      [60, 0.3],
      [300, 0.3],
      [300, 0.03],
      [1000, 0.03],
      [400, 0.55],
    ] as const) {
      const k = runFloor(n, p);
      expect(below(n, p, k), `${n} cases at ${p}`).toBeLessThanOrEqual(RUN_SHARE_ALPHA);
      expect(below(n, p, k + 1), `${n} cases at ${p}`).toBeGreaterThan(RUN_SHARE_ALPHA);
    }
  });

  it('passes the healthy 30-case sanitizer slice of issue 25 (flash-cuda ran 8) and fails one where nothing ran', () => {
    const floor = runFloor(30, 0.3);
    expect(floor).toBeGreaterThanOrEqual(1);
    expect(8).toBeGreaterThanOrEqual(floor);
    expect(0).toBeLessThan(floor);
  });

  it('is 0 exactly where a slice is too small to tell a backend that never runs: (1 - share)^n > alpha', () => {
    expect(runFloor(30, 0.03)).toBe(0); // 0.97^30 = 40%
    expect(runFloor(226, 0.03)).toBe(0);
    expect(runFloor(227, 0.03)).toBe(1); // 0.97^227 < 0.1%
    expect(runFloor(19, 0.3)).toBe(0);
    expect(runFloor(20, 0.3)).toBe(1);
  });

  it('grows with the budget: 300 cases at share 0.3 need about 66', () => {
    expect(runFloor(300, 0.3)).toBeGreaterThan(60);
    expect(runFloor(300, 0.3)).toBeLessThan(75);
    expect(runFloor(3000, 0.3)).toBeGreaterThan(runFloor(300, 0.3) * 9);
  });
});
