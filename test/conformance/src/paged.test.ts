import { describe, expect, it } from 'vitest';
import { fromPool, pagedLayout, toPool } from './paged.js';

describe('paged layouts of the cases', () => {
  const lengths = [37, 0, 16, 70];
  const layout = pagedLayout(lengths, 16, 7n);

  it('gives each sequence its own blocks of a larger pool, shuffled, with garbage past each last block', () => {
    const read: number[] = [];
    lengths.forEach((n, b) => {
      const need = Math.ceil(n / 16);
      for (let i = 0; i < layout.maxBlocksPerSeq; i++) {
        const e = layout.table[b * layout.maxBlocksPerSeq + i]!;
        if (i < need) read.push(e);
        else expect(e < 0 || e >= layout.numBlocks, `entry [${b}, ${i}] is garbage`).toBe(true);
      }
    });
    expect(new Set(read).size).toBe(read.length);
    expect(read.every((e) => e >= 0 && e < layout.numBlocks)).toBe(true);
    expect(layout.numBlocks).toBeGreaterThan(read.length);
    expect(read).not.toEqual([...read].sort((a, b) => a - b));
  });

  it('toPool then fromPool gives the packed values back; every unread element is the fill', () => {
    const heads = 2;
    const cols = 3;
    const total = lengths.reduce((a, b) => a + b, 0);
    const packed = Float64Array.from({ length: total * heads * cols }, (_, i) => i + 1);
    const pool = toPool(packed, lengths, heads, cols, layout, NaN);
    expect(fromPool(pool, lengths, heads, cols, layout)).toEqual(packed);
    expect(pool.filter((x) => Number.isNaN(x)).length).toBe(pool.length - packed.length);
  });
});
