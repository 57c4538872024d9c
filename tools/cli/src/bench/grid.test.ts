import { describe, expect, it } from 'vitest';
import { PLAIN_FEATURES } from '../problem.js';
import { CPU_GRID, STANDARD_GRID, decodeProblem, gridProblems, overheadProblem } from './grid.js';

const { causal: _c, ...features } = PLAIN_FEATURES;
const common = { dtype: 'bfloat16' as const, device: 'cuda' as const, features, seed: 0 };

describe('bench grids', () => {
  it('is the 16k-token grid of the FlashAttention papers', () => {
    const ps = gridProblems({
      ...common,
      grid: STANDARD_GRID,
      causal: [false, true],
      batch: null,
      heads: null,
      kvHeads: null,
    });
    expect(ps).toHaveLength(6 * 3 * 2);
    for (const p of ps) {
      expect(p.batch * p.seqQ).toBe(16384);
      expect(p.headsQ * p.headDim).toBe(2048);
      expect(p.seqQ).toBe(p.seqK);
    }
    expect(ps.filter((p) => p.headDim === 64).every((p) => p.headsQ === 32)).toBe(true);
    expect(ps.filter((p) => p.headDim === 256).every((p) => p.headsQ === 8)).toBe(true);
    expect(ps.map((p) => p.seqQ).slice(0, 6)).toEqual([512, 1024, 2048, 4096, 8192, 16384]);
  });

  it('lets fixed batch and heads override tokens and hidden', () => {
    const ps = gridProblems({ ...common, grid: CPU_GRID, causal: [true], batch: 3, heads: 5, kvHeads: 1 });
    expect(ps.every((p) => p.batch === 3 && p.headsQ === 5 && p.headsKV === 1 && p.causal)).toBe(true);
  });

  it('has the decode and overhead presets', () => {
    expect(decodeProblem(common)).toMatchObject({
      batch: 8,
      headsQ: 32,
      headsKV: 8,
      seqQ: 1,
      seqK: 8192,
      headDim: 128,
      enableGqa: true,
      causal: false,
    });
    expect(overheadProblem({ ...common, causal: [false] })).toEqual([
      expect.objectContaining({ batch: 1, headsQ: 1, seqQ: 16, headDim: 64 }),
    ]);
  });
});
