// Features PyTorch's SDPA lacks, each pinned by an independent formulation: ALiBi as an explicit
// additive bias, softcap and dropout by the conformance suite's naive implementation in float64
// (dropout through core's dropoutKeep, element by element).
import { dropoutKeep, dropoutThreshold, tensor } from '@attn/core';
import type { Alignment } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { expectClose, expectSameRun, f64, naiveFloat64, normal, runMath } from '../../test/math/helpers.js';

const B = 2;
const H = 3;
const D = 5;

describe('ALiBi', () => {
  const cases: { perBatch: boolean; alignment: Alignment; causal: boolean; sq: number; sk: number }[] = [
    { perBatch: false, alignment: 'upperLeft', causal: false, sq: 4, sk: 7 },
    { perBatch: true, alignment: 'lowerRight', causal: false, sq: 4, sk: 7 },
    { perBatch: true, alignment: 'lowerRight', causal: true, sq: 7, sk: 4 },
  ];
  for (const c of cases) {
    it(`slopes ${c.perBatch ? '[B, Hq]' : '[Hq]'}, ${c.alignment}${c.causal ? ' + causal' : ''} equal the bias -slope * |i + off - j|`, () => {
      const q = normal([B, H, c.sq, D], 1);
      const k = normal([B, H, c.sk, D], 2);
      const v = normal([B, H, c.sk, D], 3);
      const slopes = Float32Array.from({ length: (c.perBatch ? B : 1) * H }, (_, n) => 0.5 ** (n + 1));
      const off = c.alignment === 'lowerRight' ? c.sk - c.sq : 0;
      const bias = new Float64Array(B * H * c.sq * c.sk);
      for (let b = 0; b < B; b++)
        for (let h = 0; h < H; h++)
          for (let i = 0; i < c.sq; i++)
            for (let j = 0; j < c.sk; j++)
              bias[((b * H + h) * c.sq + i) * c.sk + j] = -slopes[c.perBatch ? b * H + h : h]! * Math.abs(i + off - j);
      const common = { isCausal: c.causal, alignment: c.alignment };
      const got = runMath(q, k, v, {
        ...common,
        alibiSlopes: tensor(slopes, c.perBatch ? [B, H] : [H], { dtype: 'float32' }),
      });
      const want = runMath(q, k, v, { ...common, attnMask: f64(bias, [B, H, c.sq, c.sk]) });
      expectSameRun(got, want, 'alibi');
    });
  }
});

describe('softcap', () => {
  it('scores become softcap * tanh(scale * q.k / softcap) before the mask', () => {
    const q = normal([B, H, 6, D], 4)
      .toFloat64Array()
      .map((x) => 3 * x); // large scores, so the cap bites
    const qt = f64(q, [B, H, 6, D]);
    const k = normal([B, H, 8, D], 5);
    const v = normal([B, H, 8, D], 6);
    const mask = normal([6, 8], 7);
    const [scale, cap] = [0.7, 2];
    const got = runMath(qt, k, v, { scale, softcap: cap, attnMask: mask }).fwd;
    const want = naiveFloat64(qt, k, v, { scale, softcap: cap, mask: { kind: 'additive', shape: [6, 8] } }, { mask });
    expectClose(got.out, want.out, 'out');
    expectClose(got.logsumexp, want.lse, 'logsumexp', 1e-7); // logsumexp is float32
  });
});

describe('dropout', () => {
  const p = 0.3;
  const seed = 0x1234_5678_9abcn;
  const offset = 7;
  const q = normal([B, H, 6, D], 8);
  const k = normal([B, H, 9, D], 9);
  const v = normal([B, H, 9, D], 10);
  const threshold = dropoutThreshold(p);
  const keep = (b: number, h: number, i: number, j: number) => dropoutKeep(seed, offset, b, h, i, j, H, threshold);

  it('out is the softmax with dropped elements zeroed and the rest scaled by 1 / (1 - p), via dropoutKeep', () => {
    const got = runMath(q, k, v, { dropoutP: p, dropoutSeed: seed, dropoutOffset: offset, isCausal: true }).fwd;
    const want = naiveFloat64(q, k, v, { causal: true, dropoutP: p }, { dropout: { seed, offset } });
    expectClose(got.out, want.out, 'out');
    // logsumexp is that of the softmax before dropout.
    expectClose(got.logsumexp, want.lse, 'logsumexp', 1e-7);
    expect(got.rng).toEqual({ seed, offset });
  });

  it('drops about p of the elements, the same ones for the same seed and offset, others for another offset', () => {
    let dropped = 0;
    for (let i = 0; i < 6; i++) for (let j = 0; j < 9; j++) dropped += keep(0, 0, i, j) ? 0 : 1;
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBeLessThan(54);
    const opts = { dropoutP: p, dropoutSeed: seed, dropoutOffset: offset };
    const a = runMath(q, k, v, opts).fwd.out.toFloat64Array();
    const b = runMath(q, k, v, opts).fwd.out.toFloat64Array();
    const c = runMath(q, k, v, { ...opts, dropoutOffset: offset + 1 }).fwd.out.toFloat64Array();
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });
});
