import { describe, expect, it } from 'vitest';
import { zeros } from './factory.js';
import { normalizeParams } from './validate.js';
import { listBackends, registerBackend } from './registry.js';
import { makeFakeBackend, maxAbsError, nanOutputs, relativeError, withIsolatedRegistry } from './testing.js';

describe('error measures', () => {
  it('maxAbsError', () => {
    expect(maxAbsError([1, 2, 3], [1, 2.5, 2])).toBe(1);
    expect(maxAbsError([Infinity, -Infinity], [Infinity, -Infinity])).toBe(0);
    expect(maxAbsError([NaN], [NaN])).toBe(Infinity);
    expect(maxAbsError([Infinity], [1])).toBe(Infinity);
    expect(() => maxAbsError([1], [1, 2])).toThrow(RangeError);
  });

  it('relativeError', () => {
    expect(relativeError([3, 4], [3, 4])).toBe(0);
    expect(relativeError([3, 5], [3, 4])).toBeCloseTo(1 / 5);
    expect(relativeError([0.5], [0])).toBe(0.5);
    expect(relativeError([NaN], [1])).toBe(Infinity);
    expect(relativeError([1, Infinity], [1, Infinity])).toBe(0);
  });
});

describe('fakes and isolation', () => {
  it('nanOutputs has the contract shapes and is all NaN', () => {
    const q = zeros([2, 3, 4, 8]);
    const v = zeros([2, 3, 5, 6]);
    const o = nanOutputs(normalizeParams(q, zeros([2, 3, 5, 8]), v));
    expect(o.out.shape).toEqual([2, 3, 4, 6]);
    expect(o.logsumexp.dtype).toBe('float32');
    expect([...o.out.toFloat64Array()].every(Number.isNaN)).toBe(true);
  });

  it('withIsolatedRegistry restores after an async fn settles', async () => {
    const before = listBackends().length;
    await withIsolatedRegistry(async () => {
      registerBackend(makeFakeBackend('temp'));
      await new Promise((r) => setTimeout(r, 1));
      expect(listBackends().map((b) => b.name)).toEqual(['temp']);
    });
    expect(listBackends().length).toBe(before);
    await expect(
      withIsolatedRegistry(async () => {
        throw new Error('nope');
      }),
    ).rejects.toThrow('nope');
    expect(listBackends().length).toBe(before);
  });
});
