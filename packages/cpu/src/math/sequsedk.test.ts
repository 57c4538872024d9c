// sequsedK on the reference: a call with keys used per batch row equals, row by row, the same call on
// key and value cut to those keys (so causal, window and ALiBi anchor at the used length), and the
// unused keys get exactly zero gradients. Dropout keeps its (b, h, i, j) elements.
import { tensor } from '@attn/core';
import type { SdpaOptions, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { expectClose, f64, normal, runMath, runMathVarlen } from '../../test/math/helpers.js';

const H = 2;
const HK = 1;
const D = 4;
const SQ = 5;
const SK = 9;

const int32 = (xs: number[]) => tensor(xs, [xs.length], { dtype: 'int32' });

/** Rows [from, from + n) of dim `dim` of a float64 tensor, as a new contiguous tensor. */
function slice(t: Tensor, dim: number, from: number, n: number): Tensor {
  return t.narrow(dim, from, n).contiguous();
}

/** The features each case combines with sequsedK. */
const FEATURES: [string, (B: number) => SdpaOptions][] = [
  ['plain', () => ({})],
  ['causal lowerRight', () => ({ isCausal: true, alignment: 'lowerRight' })],
  ['causal upperLeft + window', () => ({ isCausal: true, window: [2, 0] })],
  ['window lowerRight', () => ({ window: [1, 2], alignment: 'lowerRight' })],
  [
    'ALiBi lowerRight + softcap',
    (B) => ({
      alibiSlopes: tensor(
        Array.from({ length: B * H }, (_, n) => 0.3 + 0.1 * n),
        [B, H],
        { dtype: 'float32' },
      ),
      alignment: 'lowerRight',
      softcap: 2,
    }),
  ],
];

describe('sequsedK (dense)', () => {
  const B = 3;
  const used = [4, 0, SK];
  const q = normal([B, H, SQ, D], 1);
  const k = normal([B, HK, SK, D], 2);
  const v = normal([B, HK, SK, D + 1], 3);
  const g = normal([B, H, SQ, D + 1], 4);
  for (const [name, opts] of FEATURES) {
    it(`${name}: each row equals the call on its first sequsedK[b] keys; unused keys get zero gradients`, () => {
      const o = { ...opts(B), enableGqa: true };
      const got = runMath(q, k, v, { ...o, sequsedK: int32(used) }, g);
      for (let b = 0; b < B; b++) {
        const n = used[b]!;
        const row = (t: Tensor) => slice(t, 0, b, 1);
        const ob = { ...o, alibiSlopes: o.alibiSlopes ? slice(o.alibiSlopes, 0, b, 1) : undefined };
        const want = runMath(row(q), slice(row(k), 2, 0, n), slice(row(v), 2, 0, n), ob, row(g));
        expectClose(row(got.fwd.out), want.fwd.out, `b${b} out`);
        expectClose(row(got.fwd.logsumexp), want.fwd.logsumexp, `b${b} lse`);
        expectClose(row(got.grads.dq), want.grads.dq, `b${b} dq`);
        expectClose(slice(row(got.grads.dk), 2, 0, n), want.grads.dk, `b${b} dk`);
        expectClose(slice(row(got.grads.dv), 2, 0, n), want.grads.dv, `b${b} dv`);
        for (const t of [got.grads.dk, got.grads.dv]) {
          expect(
            [...slice(row(t), 2, n, SK - n).toFloat64Array()].every((x) => x === 0),
            `b${b} unused keys`,
          ).toBe(true);
        }
      }
      // sequsedK[1] = 0: a fully masked row, out 0 and lse -inf.
      expect([...slice(got.fwd.logsumexp, 0, 1, 1).toFloat64Array()].every((x) => x === -Infinity)).toBe(true);
    });
  }

  it('a mask and dropout keep their (b, h, i, j) elements (batch of one, so the dropout counter matches)', () => {
    const q1 = slice(q, 0, 0, 1);
    const [k1, v1, g1] = [slice(k, 0, 0, 1), slice(v, 0, 0, 1), slice(g, 0, 0, 1)];
    const mask = normal([SQ, SK], 5);
    const o: SdpaOptions = {
      enableGqa: true,
      dropoutP: 0.3,
      dropoutSeed: 11n,
      attnMask: mask,
      isCausal: true,
      alignment: 'lowerRight',
    };
    const got = runMath(q1, k1, v1, { ...o, sequsedK: int32([6]) }, g1);
    const want = runMath(q1, slice(k1, 2, 0, 6), slice(v1, 2, 0, 6), { ...o, attnMask: slice(mask, 1, 0, 6) }, g1);
    expectClose(got.fwd.out, want.fwd.out, 'out');
    expectClose(got.grads.dq, want.grads.dq, 'dq');
    expectClose(slice(got.grads.dk, 2, 0, 6), want.grads.dk, 'dk');
    expectClose(slice(got.grads.dbias!, 1, 0, 6), want.grads.dbias!, 'dbias');
  });
});

describe('sequsedK (varlen)', () => {
  it('each sequence equals the packed call on its first sequsedK[b] keys, dropout included', () => {
    const lensQ = [3, 1, 4];
    const lensK = [5, 2, 6];
    const used = [2, 2, 0];
    const offs = (l: number[]) => l.reduce<number[]>((a, n) => [...a, a[a.length - 1]! + n], [0]);
    const [oq, ok] = [offs(lensQ), offs(lensK)];
    const q = normal([oq[3]!, H, D], 6);
    const k = normal([ok[3]!, HK, D], 7);
    const v = normal([ok[3]!, HK, D], 8);
    const g = normal([oq[3]!, H, D], 9);
    // The cut inputs: the first used[b] keys of each sequence, packed again.
    const usedRows = () => lensK.flatMap((_, b) => Array.from({ length: used[b]! }, (_, j) => ok[b]! + j));
    const gatherRows = (t: Tensor, rows: number[]) => {
      const per = t.numel / t.shape[0]!;
      const data = t.toFloat64Array();
      return f64(
        rows.flatMap((r) => [...data.subarray(r * per, (r + 1) * per)]),
        [rows.length, ...t.shape.slice(1)],
      );
    };
    const keep = usedRows();
    const base = {
      enableGqa: true,
      isCausal: true,
      alignment: 'lowerRight' as const,
      dropoutP: 0.25,
      dropoutSeed: 3n,
      maxSeqlenQ: 4,
    };
    const got = runMathVarlen(
      q,
      k,
      v,
      { ...base, cuSeqlensQ: int32(oq), cuSeqlensK: int32(ok), maxSeqlenK: 6, sequsedK: int32(used) },
      g,
    );
    const cut = offs(used);
    const want = runMathVarlen(
      q,
      gatherRows(k, keep),
      gatherRows(v, keep),
      { ...base, cuSeqlensQ: int32(oq), cuSeqlensK: int32(cut), maxSeqlenK: 2 },
      g,
    );
    expectClose(got.fwd.out, want.fwd.out, 'out');
    expectClose(got.fwd.logsumexp, want.fwd.logsumexp, 'lse');
    expectClose(got.grads.dq, want.grads.dq, 'dq');
    expectClose(gatherRows(got.grads.dk, keep), want.grads.dk, 'dk');
    expectClose(gatherRows(got.grads.dv, keep), want.grads.dv, 'dv');
    const unused = Array.from({ length: ok[3]! }, (_, r) => r).filter((r) => !keep.includes(r));
    expect([...gatherRows(got.grads.dk, unused).toFloat64Array()].every((x) => x === 0)).toBe(true);
  });
});
