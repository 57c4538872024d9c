import { tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { shardLayout, splitEven } from './layout.js';
import { shardTensor, unshardTensor } from './shard.js';

describe('splitEven', () => {
  it('covers [0, S) with consecutive chunks differing by at most one', () => {
    for (const [s, n] of [
      [17, 6],
      [1000, 6],
      [3, 8],
      [0, 4],
      [12, 4],
    ] as const) {
      const c = splitEven(s, n);
      expect(c).toHaveLength(n);
      expect(c.reduce((a, x) => a + x.length, 0)).toBe(s);
      c.forEach((x, i) => expect(x.start).toBe(i === 0 ? 0 : c[i - 1]!.start + c[i - 1]!.length));
      const lens = c.map((x) => x.length);
      expect(Math.max(...lens) - Math.min(...lens)).toBeLessThanOrEqual(1);
    }
  });
});

describe('shardLayout', () => {
  it('zigzag gives rank r chunks r and 2R-1-r', () => {
    const l = shardLayout('zigzag', 17, 3);
    expect(l.chunks).toHaveLength(6);
    expect(l.chunksOf(0).map((c) => c.index)).toEqual([0, 5]);
    expect(l.chunksOf(1).map((c) => c.index)).toEqual([1, 4]);
    expect(l.chunksOf(2).map((c) => c.index)).toEqual([2, 3]);
    expect([0, 1, 2].map((r) => l.lengthOf(r))).toEqual([5, 6, 6]); // chunks of 3,3,3,3,3,2
  });

  it('contiguous gives rank r chunk r', () => {
    const l = shardLayout('contiguous', 10, 4);
    expect([0, 1, 2, 3].map((r) => l.chunksOf(r).map((c) => [c.start, c.length]))).toEqual([
      [[0, 3]],
      [[3, 3]],
      [[6, 2]],
      [[8, 2]],
    ]);
  });

  it('refuses bad ranks and kinds with a code', () => {
    expect(() => shardLayout('zigzag', 8, 0)).toThrow(expect.objectContaining({ code: 'ATTN_CP_LAYOUT' }));
    expect(() => shardLayout('striped' as never, 8, 2)).toThrow(expect.objectContaining({ code: 'ATTN_CP_LAYOUT' }));
    expect(() => shardLayout('zigzag', 8, 2).chunksOf(2)).toThrow(expect.objectContaining({ code: 'ATTN_CP_LAYOUT' }));
  });
});

describe('shardTensor / unshardTensor', () => {
  for (const kind of ['contiguous', 'zigzag'] as const) {
    it(`${kind}: every position lands in exactly one shard and comes back in place (uneven S)`, () => {
      const [B, H, S, D] = [2, 3, 17, 5];
      const values = Float64Array.from({ length: B * H * S * D }, (_, i) => i);
      const t = tensor(values, [B, H, S, D], { dtype: 'float64' });
      const layout = shardLayout(kind, S, 3);
      const shards = shardTensor(t, layout);
      shards.forEach((chunks, r) =>
        chunks.forEach((c, i) => {
          const chunk = layout.chunksOf(r)[i]!;
          expect(c.shape).toEqual([B, H, chunk.length, D]);
          const v = c.toFloat64Array();
          // element (b, h, s, d) of the chunk is position chunk.start + s of the full tensor
          for (let n = 0; n < v.length; n++) {
            const d = n % D;
            const s = Math.floor(n / D) % chunk.length;
            const bh = Math.floor(n / (D * chunk.length));
            expect(v[n]).toBe(values[(bh * S + chunk.start + s) * D + d]);
          }
        }),
      );
      expect(Array.from(unshardTensor(shards, layout).toFloat64Array())).toEqual(Array.from(values));
      // The logsumexp's [B, H, S] along dim 2 too.
      const lse = tensor(values.subarray(0, B * H * S), [B, H, S], { dtype: 'float32' });
      expect(Array.from(unshardTensor(shardTensor(lse, layout), layout).toFloat64Array())).toEqual(
        Array.from(lse.toFloat64Array()),
      );
    });
  }

  it("refuses a tensor whose sequence is not the layout's", () => {
    const t = tensor(new Float64Array(16), [1, 1, 8, 2], { dtype: 'float64' });
    expect(() => shardTensor(t, shardLayout('zigzag', 9, 2))).toThrow(
      expect.objectContaining({ code: 'ATTN_CP_SHARD' }),
    );
  });
});
