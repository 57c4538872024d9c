import { describe, expect, it } from 'vitest';
import { accumulator, rounder } from './rounding.js';

describe('rounding to a dtype', () => {
  it('rounds to nearest, ties to even', () => {
    expect(rounder('float16')(1 + 2 ** -11)).toBe(1); // tie between 1 and 1 + 2^-10: even is 1
    expect(rounder('float16')(1 + 3 * 2 ** -11)).toBe(1 + 2 ** -9); // tie: even is 1 + 2^-9
    expect(rounder('bfloat16')(1 + 2 ** -8)).toBe(1);
    expect(rounder('bfloat16')(1 + 3 * 2 ** -9)).toBe(1 + 2 ** -7);
    expect(rounder('float32')(1 + 2 ** -30)).toBe(1);
    expect(rounder('float64')(1 + 2 ** -30)).toBe(1 + 2 ** -30);
  });

  it('keeps infinities and overflows halves to them', () => {
    expect(rounder('float16')(-Infinity)).toBe(-Infinity);
    expect(rounder('float16')(70000)).toBe(Infinity);
    expect(rounder('bfloat16')(3e38)).toBeCloseTo(3e38, -36);
  });

  it('accumulates in float32 below float64', () => {
    expect(accumulator('float16')(1 + 2 ** -30)).toBe(1);
    expect(accumulator('float64')(1 + 2 ** -30)).toBe(1 + 2 ** -30);
  });
});
