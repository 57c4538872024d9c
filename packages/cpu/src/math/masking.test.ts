// Causal alignment and sliding windows pinned to explicit boolean masks; fully masked rows; masks
// of every broadcast shape, bool against additive, and dbias reduced to the mask's own shape.
import { tensor } from '@attn/core';
import type { Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { expectClose, expectSameRun, f64, normal, runMath } from '../../test/math/helpers.js';

const B = 2;
const H = 2;
const D = 4;

function qkv(sq: number, sk: number, seed: number): [Tensor, Tensor, Tensor] {
  return [normal([B, H, sq, D], seed), normal([B, H, sk, D], seed + 1), normal([B, H, sk, D + 1], seed + 2)];
}

/** A bool [Sq, Sk] mask: true where attend(i, j). */
function boolMask(sq: number, sk: number, attend: (i: number, j: number) => boolean): Tensor {
  const m = new Uint8Array(sq * sk);
  for (let i = 0; i < sq; i++) for (let j = 0; j < sk; j++) m[i * sk + j] = attend(i, j) ? 1 : 0;
  return tensor(m, [sq, sk], { dtype: 'bool' });
}

const SIZES: [number, number][] = [
  [4, 9],
  [9, 4],
  [6, 6],
];

describe('causal', () => {
  for (const [sq, sk] of SIZES) {
    it(`upper-left: query i sees keys 0..i (Sq ${sq}, Sk ${sk})`, () => {
      const [q, k, v] = qkv(sq, sk, 1);
      const want = runMath(q, k, v, { attnMask: boolMask(sq, sk, (i, j) => j <= i) });
      expectSameRun(runMath(q, k, v, { isCausal: true }), want, 'isCausal');
      expectSameRun(runMath(q, k, v, { isCausal: true, alignment: 'upperLeft' }), want, 'upperLeft');
    });
    it(`lower-right: query i sees keys 0..i + Sk - Sq (Sq ${sq}, Sk ${sk})`, () => {
      const [q, k, v] = qkv(sq, sk, 2);
      const want = runMath(q, k, v, { attnMask: boolMask(sq, sk, (i, j) => j <= i + sk - sq) });
      expectSameRun(runMath(q, k, v, { isCausal: true, alignment: 'lowerRight' }), want, 'lowerRight');
    });
  }
});

describe('sliding window', () => {
  const cases: {
    window: [number, number];
    alignment: 'upperLeft' | 'lowerRight';
    causal: boolean;
    sq: number;
    sk: number;
  }[] = [
    { window: [2, 1], alignment: 'upperLeft', causal: false, sq: 5, sk: 9 },
    { window: [3, 0], alignment: 'lowerRight', causal: false, sq: 5, sk: 9 },
    { window: [-1, 2], alignment: 'upperLeft', causal: false, sq: 8, sk: 6 },
    { window: [1, -1], alignment: 'lowerRight', causal: false, sq: 8, sk: 6 },
    { window: [4, 4], alignment: 'lowerRight', causal: true, sq: 5, sk: 9 },
  ];
  for (const c of cases) {
    it(`[${c.window.join(', ')}] ${c.alignment}${c.causal ? ' + causal' : ''} equals its explicit mask (Sq ${c.sq}, Sk ${c.sk})`, () => {
      const [q, k, v] = qkv(c.sq, c.sk, 3);
      const [left, right] = c.window;
      const off = c.alignment === 'lowerRight' ? c.sk - c.sq : 0;
      const attend = (i: number, j: number) =>
        (left < 0 || j >= i + off - left) && (right < 0 || j <= i + off + right) && (!c.causal || j <= i + off);
      const want = runMath(q, k, v, { attnMask: boolMask(c.sq, c.sk, attend) });
      const got = runMath(q, k, v, { window: c.window, alignment: c.alignment, isCausal: c.causal });
      expectSameRun(got, want, `window ${c.window.join(',')}`);
    });
  }
});

describe('fully masked rows', () => {
  function expectEmptyRows(run: ReturnType<typeof runMath>, rows: readonly number[], sq: number): void {
    const out = run.fwd.out.toFloat64Array();
    const lse = run.fwd.logsumexp.toFloat64Array();
    const dq = run.grads.dq.toFloat64Array();
    const dv = D + 1;
    for (let bh = 0; bh < B * H; bh++) {
      for (let i = 0; i < sq; i++) {
        const empty = rows.includes(i);
        expect(Number.isFinite(lse[bh * sq + i]!) || lse[bh * sq + i] === -Infinity).toBe(true);
        if (!empty) continue;
        expect(lse[bh * sq + i], `lse of row ${i}`).toBe(-Infinity);
        expect([...out.subarray((bh * sq + i) * dv, (bh * sq + i + 1) * dv)]).toEqual(Array(dv).fill(0));
        expect([...dq.subarray((bh * sq + i) * D, (bh * sq + i + 1) * D)]).toEqual(Array(D).fill(0));
      }
    }
    for (const g of [out, dq, run.grads.dk.toFloat64Array(), run.grads.dv.toFloat64Array()]) {
      expect(g.every(Number.isFinite), 'every output and gradient is finite').toBe(true);
    }
  }

  it('bool mask rows with no key give out 0, logsumexp -inf, zero gradients', () => {
    const [q, k, v] = qkv(5, 7, 4);
    expectEmptyRows(runMath(q, k, v, { attnMask: boolMask(5, 7, (i, j) => i !== 1 && i !== 4 && j !== 2) }), [1, 4], 5);
  });

  it('additive -inf rows do the same, and dbias is 0 there', () => {
    const [q, k, v] = qkv(5, 7, 5);
    const m = normal([5, 7], 6).toFloat64Array();
    m.fill(-Infinity, 2 * 7, 3 * 7);
    const run = runMath(q, k, v, { attnMask: f64(m, [5, 7]) });
    expectEmptyRows(run, [2], 5);
    expect([...run.grads.dbias!.toFloat64Array().subarray(14, 21)]).toEqual(Array(7).fill(0));
  });

  it('lower-right causal with Sq > Sk leaves the first Sq - Sk rows empty', () => {
    const [q, k, v] = qkv(7, 4, 7);
    expectEmptyRows(runMath(q, k, v, { isCausal: true, alignment: 'lowerRight' }), [0, 1, 2], 7);
  });

  it('a window that leaves a row no key empties that row', () => {
    const [q, k, v] = qkv(5, 3, 8);
    // Upper-left, right = 0, left = 0: row i sees key i only, so rows 3 and 4 (past Sk = 3) see nothing.
    expectEmptyRows(runMath(q, k, v, { window: [0, 0] }), [3, 4], 5);
  });
});

describe('masks', () => {
  it('a bool mask equals the additive 0 / -inf mask, gradients included', () => {
    const [q, k, v] = qkv(5, 7, 9);
    const bool = normal([B, 1, 5, 7], 10)
      .toFloat64Array()
      .map((x) => (x > -0.7 ? 1 : 0));
    const additive = bool.map((x) => (x ? 0 : -Infinity));
    expectSameRun(
      runMath(q, k, v, { attnMask: tensor(bool, [B, 1, 5, 7], { dtype: 'bool' }) }),
      runMath(q, k, v, { attnMask: f64(additive, [B, 1, 5, 7]) }),
      'bool vs additive',
    );
  });

  it('a broadcast additive mask equals its expanded form, and dbias is the sum over broadcast dims', () => {
    const [q, k, v] = qkv(5, 7, 11);
    const small = normal([1, H, 1, 7], 12);
    const full = small.expand([B, H, 5, 7]).contiguous();
    const got = runMath(q, k, v, { attnMask: small });
    const want = runMath(q, k, v, { attnMask: full });
    expectSameRun(got, want, 'broadcast mask');
    expect(got.grads.dbias!.shape).toEqual([1, H, 1, 7]);
    const fullGrad = want.grads.dbias!.toFloat64Array();
    const reduced = new Float64Array(H * 7);
    for (let b = 0; b < B; b++)
      for (let h = 0; h < H; h++)
        for (let i = 0; i < 5; i++)
          for (let j = 0; j < 7; j++) reduced[h * 7 + j]! += fullGrad[((b * H + h) * 5 + i) * 7 + j]!;
    expectClose(got.grads.dbias!, reduced, 'dbias reduced over B and Sq');
  });

  it('reads a mask through its strides (a transposed view equals its contiguous copy)', () => {
    const [q, k, v] = qkv(5, 7, 13);
    const transposed = normal([7, 5], 14).transpose(0, 1);
    expectSameRun(
      runMath(q, k, v, { attnMask: transposed }),
      runMath(q, k, v, { attnMask: transposed.contiguous() }),
      'strided mask',
      0,
    );
  });
});
