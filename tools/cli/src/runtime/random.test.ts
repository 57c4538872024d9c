import { describe, expect, it } from 'vitest';
import { RANDOM_BLOCK, randomTensor, tileInto } from './random.js';

describe('random inputs', () => {
  it('tiles a block with a different rotation per tile', () => {
    const block = Float32Array.from({ length: 8 }, (_, i) => i);
    const out = tileInto(new Float32Array(20), block, 0);
    expect(Array.from(out.subarray(0, 8))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(out.subarray(8, 16)).size).toBe(8); // a permutation of the block
    expect(Array.from(out.subarray(8, 16))).not.toEqual(Array.from(out.subarray(0, 8)));
  });

  it('is reproducible for a seed and differs between seeds', () => {
    const a = randomTensor([2, 3, 4], 'float32', 'cpu', 5).toFloat64Array();
    const b = randomTensor([2, 3, 4], 'float32', 'cpu', 5).toFloat64Array();
    const c = randomTensor([2, 3, 4], 'float32', 'cpu', 6).toFloat64Array();
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(Array.from(a)).not.toEqual(Array.from(c));
  });

  it('fills large tensors with standard-normal values', () => {
    const t = randomTensor([RANDOM_BLOCK + 12345], 'float32', 'cpu', 1);
    expect(t.dtype).toBe('float32');
    const x = t.toFloat64Array();
    let sum = 0;
    let sq = 0;
    for (const v of x) {
      sum += v;
      sq += v * v;
    }
    const mean = sum / x.length;
    expect(Math.abs(mean)).toBeLessThan(0.01);
    expect(sq / x.length - mean * mean).toBeGreaterThan(0.95);
    expect(sq / x.length - mean * mean).toBeLessThan(1.05);
  });
});

describe('large random inputs', () => {
  it('differ between seeds', () => {
    const a = randomTensor([RANDOM_BLOCK + 8], 'float32', 'cpu', 1).toFloat64Array();
    const b = randomTensor([RANDOM_BLOCK + 8], 'float32', 'cpu', 2).toFloat64Array();
    expect(a.subarray(0, 64)).not.toEqual(b.subarray(0, 64));
  });
});
