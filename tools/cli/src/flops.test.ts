import { describe, expect, it } from 'vitest';
import { forwardFlops, modeFlops, visibleFraction, type FlopShape } from './flops.js';

const shape = (over: Partial<FlopShape> = {}): FlopShape => ({
  batch: 2,
  headsQ: 16,
  seqQ: 1024,
  seqK: 1024,
  headDim: 128,
  headDimV: 128,
  causal: false,
  alignment: 'upperLeft',
  window: null,
  ...over,
});

/** Brute force: count visible (i, j) pairs of the score matrix. */
function bruteFraction(s: FlopShape): number {
  const shift = s.alignment === 'lowerRight' ? s.seqK - s.seqQ : 0;
  let n = 0;
  for (let i = 0; i < s.seqQ; i++) {
    for (let j = 0; j < s.seqK; j++) {
      const d = i + shift;
      let ok = !s.causal || j <= d;
      if (s.window) {
        if (s.window[0] >= 0 && j < d - s.window[0]) ok = false;
        if (s.window[1] >= 0 && j > d + s.window[1]) ok = false;
      }
      if (ok) n++;
    }
  }
  return n / (s.seqQ * s.seqK);
}

describe('FLOP convention (FlashAttention benchmarks)', () => {
  it('matches flops() of benchmark_flash_attention.py', () => {
    // f = 4 * batch * seqlen**2 * nheads * headdim // (2 if causal else 1)
    expect(forwardFlops(shape())).toBe(4 * 2 * 1024 ** 2 * 16 * 128);
    expect(forwardFlops(shape({ causal: true }))).toBe((4 * 2 * 1024 ** 2 * 16 * 128) / 2);
    expect(modeFlops(shape(), 'bwd')).toBe(2.5 * forwardFlops(shape()));
    expect(modeFlops(shape(), 'fwdbwd')).toBe(3.5 * forwardFlops(shape()));
  });

  it('averages D and Dv when they differ', () => {
    expect(forwardFlops(shape({ headDim: 192, headDimV: 128 }))).toBe(4 * 2 * 16 * 1024 * 1024 * 160);
  });

  it.each([
    { seqQ: 7, seqK: 19, alignment: 'upperLeft' as const },
    { seqQ: 7, seqK: 19, alignment: 'lowerRight' as const },
    { seqQ: 19, seqK: 7, alignment: 'lowerRight' as const },
    { seqQ: 1, seqK: 64, alignment: 'lowerRight' as const },
  ])('counts the exact visible pairs when Sq != Sk: %o', (o) => {
    const s = shape({ ...o, causal: true });
    expect(visibleFraction(s)).toBeCloseTo(bruteFraction(s), 12);
  });

  it('counts windows exactly', () => {
    const s = shape({ seqQ: 33, seqK: 33, window: [4, 2] });
    expect(visibleFraction(s)).toBeCloseTo(bruteFraction(s), 12);
    const c = shape({ seqQ: 40, seqK: 40, window: [8, -1], causal: true });
    expect(visibleFraction(c)).toBeCloseTo(bruteFraction(c), 12);
  });

  it('gives decode with lower-right causal the full key range', () => {
    expect(visibleFraction(shape({ seqQ: 1, seqK: 8192, causal: true, alignment: 'lowerRight' }))).toBe(1);
    expect(visibleFraction(shape({ seqQ: 1, seqK: 8192, causal: true, alignment: 'upperLeft' }))).toBe(1 / 8192);
  });
});
