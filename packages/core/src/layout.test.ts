import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AttnInputError } from './errors.js';
import {
  broadcastsTo,
  checkShape,
  contiguousStrides,
  expandedStridesTo,
  forEachRow,
  isContiguousLayout,
  maxReachableIndex,
  normalizeDim,
  viewStrides,
} from './layout.js';

/** All storage indices of a strided view in logical row-major order, by brute force. */
function bruteIndices(shape: number[], strides: number[], offset: number): number[] {
  const out: number[] = [];
  const rec = (d: number, base: number): void => {
    if (d === shape.length) {
      out.push(base);
      return;
    }
    for (let i = 0; i < shape[d]!; i++) rec(d + 1, base + i * strides[d]!);
  };
  rec(0, offset);
  return out;
}

describe('layout', () => {
  it('checks shapes', () => {
    expect(checkShape([2, 3, 0])).toBe(0);
    expect(checkShape([])).toBe(1);
    expect(() => checkShape([2, -1])).toThrow(AttnInputError);
    expect(() => checkShape([1.5])).toThrow(expect.objectContaining({ code: 'ATTN_SHAPE' }));
    expect(() => checkShape([2 ** 31])).toThrow(expect.objectContaining({ code: 'ATTN_SIZE' }));
    expect(() => checkShape([2 ** 31 - 1, 2 ** 31 - 1, 4])).toThrow(expect.objectContaining({ code: 'ATTN_SIZE' }));
  });

  it('knows contiguous layouts', () => {
    expect(contiguousStrides([2, 3, 4])).toEqual([12, 4, 1]);
    expect(isContiguousLayout([2, 3], [3, 1])).toBe(true);
    expect(isContiguousLayout([2, 3], [1, 2])).toBe(false);
    expect(isContiguousLayout([2, 1, 3], [3, 99, 1])).toBe(true); // size-1 dims may have any stride
    expect(isContiguousLayout([0, 3], [5, 7])).toBe(true);
    expect(isContiguousLayout([2, 3], [4, 1])).toBe(false); // a gap between rows
  });

  it('wraps negative dims and rejects out-of-range ones', () => {
    expect(normalizeDim(-1, 4)).toBe(3);
    expect(() => normalizeDim(4, 4)).toThrow(expect.objectContaining({ code: 'ATTN_DIM' }));
  });

  it('visits rows in logical order for any strides', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 0, maxLength: 4 }),
        fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 4, maxLength: 4 }),
        fc.integer({ min: 0, max: 5 }),
        (shape, allStrides, offset) => {
          const strides = allStrides.slice(0, shape.length);
          const got: number[] = [];
          forEachRow(shape, strides, offset, (start, stride, len, logical) => {
            expect(logical).toBe(got.length);
            for (let t = 0; t < len; t++) got.push(start + t * stride);
          });
          expect(got).toEqual(bruteIndices(shape, strides, offset));
          if (got.length > 0) expect(maxReachableIndex(shape, strides, offset)).toBe(Math.max(...got));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('finds view strides exactly when a view exists', () => {
    expect(viewStrides([2, 3, 4], [12, 4, 1], [6, 4])).toEqual([4, 1]);
    expect(viewStrides([2, 3, 4], [12, 4, 1], [24])).toEqual([1]);
    // Transposed [3, 2] of a [2, 3]: cannot be flattened without a copy.
    expect(viewStrides([3, 2], [1, 3], [6])).toBeNull();
    // But splitting its dims is fine.
    const split = viewStrides([3, 2], [1, 3], [3, 1, 2])!;
    expect(bruteIndices([3, 1, 2], split, 0)).toEqual(bruteIndices([3, 2], [1, 3], 0));
    expect(viewStrides([], [], [1, 1])).toEqual([1, 1]);
    // The element order of any view that exists must be the logical order of the source.
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 4 }),
        fc.nat(23),
        (shape, permSeed) => {
          const base = contiguousStrides(shape);
          const perm = [...shape.keys()].sort((a, b) => ((a * 7 + permSeed) % 5) - ((b * 7 + permSeed) % 5));
          const pShape = perm.map((d) => shape[d]!);
          const pStrides = perm.map((d) => base[d]!);
          const numel = pShape.reduce((a, b) => a * b, 1);
          const target = [numel];
          const vs = viewStrides(pShape, pStrides, target);
          const order = bruteIndices(pShape, pStrides, 0);
          if (vs) expect(bruteIndices(target, vs, 0)).toEqual(order);
          else expect(isContiguousLayout(pShape, pStrides)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('broadcasts right-aligned and zeroes broadcast strides', () => {
    expect(broadcastsTo([3, 1], [2, 4, 3, 5])).toBe(true);
    expect(broadcastsTo([4, 3, 5], [2, 4, 3, 5])).toBe(true);
    expect(broadcastsTo([2, 3, 5], [2, 4, 3, 5])).toBe(false);
    expect(broadcastsTo([1, 1, 1, 1, 1], [1, 1, 1, 1])).toBe(false);
    expect(expandedStridesTo([3, 1], [1, 1], [2, 4, 3, 5])).toEqual([0, 0, 1, 0]);
    expect(expandedStridesTo([2, 1, 3, 5], [15, 15, 5, 1], [2, 4, 3, 5])).toEqual([15, 0, 5, 1]);
  });
});
