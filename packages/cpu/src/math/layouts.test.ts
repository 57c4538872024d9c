// Layouts and shapes: strided views equal contiguous copies, GQA equals repeated kv heads, varlen
// equals one dense call per sequence, Dv != D and odd head dims, and low-precision outputs are the
// float64 result rounded once.
import { tensor } from '@attn/core';
import type { FloatDType, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { expectClose, expectSameRun, normal, runMath, runMathVarlen } from '../../test/math/helpers.js';

describe('strides', () => {
  it('transposed [B, S, H, D] views give the same bits as contiguous inputs', () => {
    const q = normal([2, 6, 3, 5], 1).transpose(1, 2);
    const k = normal([2, 7, 3, 5], 2).transpose(1, 2);
    const v = normal([2, 7, 3, 4], 3).transpose(1, 2);
    expect(q.isContiguous()).toBe(false);
    const opts = { isCausal: true, alignment: 'lowerRight' as const };
    expectSameRun(runMath(q, k, v, opts), runMath(q.contiguous(), k.contiguous(), v.contiguous(), opts), 'bshd', 0);
  });

  it('narrowed views with a storage offset and a non-unit last stride', () => {
    const q = normal([2, 3, 9, 10], 4).narrow(2, 2, 6).narrow(3, 1, 4);
    const k = normal([2, 3, 7, 4], 5).permute([0, 1, 3, 2]).contiguous().transpose(2, 3); // last stride 7
    const v = normal([3, 2, 7, 4], 6).transpose(0, 1);
    expect(k.strides[3]).toBe(7);
    expectSameRun(runMath(q, k, v), runMath(q.contiguous(), k.contiguous(), v.contiguous()), 'views', 0);
  });
});

/** [B, Hk, S, D] -> [B, Hk * group, S, D], each kv head repeated for its query heads. */
function repeatHeads(t: Tensor, group: number): Tensor {
  const [B, Hk, S, D] = t.shape as [number, number, number, number];
  return t
    .unsqueeze(2)
    .expand([B, Hk, group, S, D])
    .reshape([B, Hk * group, S, D]);
}

/** Sums groups of query heads back onto their kv head: the gradient of repeatHeads. */
function sumHeads(t: Tensor, group: number): Float64Array {
  const [B, H, S, D] = t.shape as [number, number, number, number];
  const x = t.toFloat64Array();
  const out = new Float64Array((x.length / group) | 0);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let n = 0; n < S * D; n++)
        out[(b * (H / group) + Math.floor(h / group)) * S * D + n]! += x[(b * H + h) * S * D + n]!;
  return out;
}

describe('GQA and MQA', () => {
  for (const [hq, hk] of [
    [6, 2],
    [4, 1],
  ] as const) {
    it(`Hq ${hq}, Hk ${hk} equals repeating each kv head ${hq / hk} times`, () => {
      const q = normal([2, hq, 5, 4], 7);
      const k = normal([2, hk, 8, 4], 8);
      const v = normal([2, hk, 8, 3], 9);
      const opts = { isCausal: true, alignment: 'lowerRight' as const };
      const got = runMath(q, k, v, { ...opts, enableGqa: true });
      const want = runMath(q, repeatHeads(k, hq / hk), repeatHeads(v, hq / hk), opts);
      expectClose(got.fwd.out, want.fwd.out, 'out');
      expectClose(got.fwd.logsumexp, want.fwd.logsumexp, 'logsumexp');
      expectClose(got.grads.dq, want.grads.dq, 'dq');
      expectClose(got.grads.dk, sumHeads(want.grads.dk, hq / hk), 'dk');
      expectClose(got.grads.dv, sumHeads(want.grads.dv, hq / hk), 'dv');
    });
  }
});

describe('varlen', () => {
  const lensQ = [3, 6, 1];
  const lensK = [5, 6, 2];
  const offsets = (lens: number[]) => lens.reduce((cu, n) => [...cu, cu[cu.length - 1]! + n], [0]);
  const [Hq, Hk, D, Dv] = [4, 2, 5, 3];

  it('packed sequences equal one dense call each, gradients included (GQA, lower-right causal, window)', () => {
    const [cuQ, cuK] = [offsets(lensQ), offsets(lensK)];
    const [tq, tk] = [cuQ[lensQ.length]!, cuK[lensK.length]!];
    const q = normal([tq, Hq, D], 10);
    const k = normal([tk, Hk, D], 11);
    const v = normal([tk, Hk, Dv], 12);
    const gradOut = normal([tq, Hq, Dv], 13);
    const common = {
      enableGqa: true,
      isCausal: true,
      alignment: 'lowerRight' as const,
      window: [2, -1] as [number, number],
    };
    const packed = runMathVarlen(
      q,
      k,
      v,
      {
        ...common,
        cuSeqlensQ: tensor(cuQ, [cuQ.length], { dtype: 'int32' }),
        cuSeqlensK: tensor(cuK, [cuK.length], { dtype: 'int32' }),
        maxSeqlenQ: Math.max(...lensQ),
        maxSeqlenK: Math.max(...lensK),
      },
      gradOut,
    );
    expect(packed.fwd.logsumexp.shape).toEqual([Hq, tq]);
    // Rows [start, start + n) of a packed [total, H, C] tensor as a dense [1, H, n, C] one.
    const seq = (t: Tensor, start: number, n: number) => t.narrow(0, start, n).transpose(0, 1).unsqueeze(0);
    lensQ.forEach((sq, b) => {
      const [oq, ok, sk] = [cuQ[b]!, cuK[b]!, lensK[b]!];
      const dense = runMath(seq(q, oq, sq), seq(k, ok, sk), seq(v, ok, sk), common, seq(gradOut, oq, sq).contiguous());
      const what = `sequence ${b}`;
      expectClose(seq(packed.fwd.out, oq, sq), dense.fwd.out, `${what}: out`);
      expectClose(packed.fwd.logsumexp.narrow(1, oq, sq), dense.fwd.logsumexp, `${what}: logsumexp`);
      expectClose(seq(packed.grads.dq, oq, sq), dense.grads.dq, `${what}: dq`);
      expectClose(seq(packed.grads.dk, ok, sk), dense.grads.dk, `${what}: dk`);
      expectClose(seq(packed.grads.dv, ok, sk), dense.grads.dv, `${what}: dv`);
    });
  });
});

describe('head dims and dtypes', () => {
  it('Dv != D and odd head dims', () => {
    const q = normal([1, 2, 3, 7], 13);
    const k = normal([1, 2, 4, 7], 14);
    const v = normal([1, 2, 4, 11], 15);
    const run = runMath(q, k, v);
    expect(run.fwd.out.shape).toEqual([1, 2, 3, 11]);
    expect(run.grads.dv.shape).toEqual([1, 2, 4, 11]);
  });

  for (const dtype of ['float32', 'float16', 'bfloat16'] as FloatDType[]) {
    it(`${dtype}: out is the float64 result of the same inputs, rounded once`, () => {
      const [q, k, v] = [normal([2, 2, 6, 8], 16), normal([2, 2, 9, 8], 17), normal([2, 2, 9, 8], 18)].map((t) =>
        t.toDType(dtype),
      );
      const opts = { isCausal: true, dropoutP: 0.25, dropoutSeed: 3n };
      const low = runMath(q!, k!, v!, opts);
      const high = runMath(q!.toDType('float64'), k!.toDType('float64'), v!.toDType('float64'), opts);
      expect(low.fwd.out.dtype).toBe(dtype);
      expect(low.fwd.out.toFloat64Array()).toEqual(high.fwd.out.toDType(dtype).toFloat64Array());
      expect(low.fwd.logsumexp.toFloat64Array()).toEqual(high.fwd.logsumexp.toFloat64Array());
    });
  }
});
