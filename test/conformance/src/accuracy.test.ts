import { describe, expect, it } from 'vitest';
import { judge, DEFAULT_SLACK } from './accuracy.js';
import type { CaseSpec } from './cases.js';
import { makeInputs } from './inputs.js';
import { naiveAttention } from './naive.js';

const ref = Float64Array.from([1, -2, 0.5, -Infinity]);
const naive = Float64Array.from([1.01, -2, 0.5, -Infinity]); // naive error 0.01

describe('judge (the accuracy rule)', () => {
  it('passes an error up to 2x the naive error plus slack', () => {
    const slack = DEFAULT_SLACK.float16 * 2; // max(1, max |ref|) = 2
    expect(judge('out', 'float16', Float64Array.from([1, -2.02 + slack / 2, 0.5, -Infinity]), ref, naive).ok).toBe(
      true,
    );
  });

  it('fails beyond it and says where', () => {
    const v = judge('out', 'float16', Float64Array.from([1, -2.03, 0.5, -Infinity]), ref, naive);
    expect(v.ok).toBe(false);
    expect(v.message).toMatch(/out: .*error 3\.0+e-2 > bound .* worst \[1\]/);
  });

  it('never passes NaN, even where the bound is huge', () => {
    const loose = Float64Array.from([100, -2, 0.5, -Infinity]);
    expect(judge('out', 'bfloat16', Float64Array.from([1, NaN, 0.5, -Infinity]), ref, loose).ok).toBe(false);
  });

  it('requires the exact value where the reference is infinite (logsumexp -inf)', () => {
    const v = judge('logsumexp', 'float32', Float64Array.from([1, -2, 0.5, 0]), ref, ref);
    expect(v.ok).toBe(false);
    expect(v.message).toMatch(/reference is infinite \(-Infinity\) at \[3\]/);
  });

  it('fails when the naive implementation and the reference disagree grossly', () => {
    const wrong = Float64Array.from([3, -2, 0.5, -Infinity]);
    expect(judge('out', 'float64', ref, ref, wrong).message).toMatch(/one of the two is wrong/);
  });

  it('fails on a length mismatch', () => {
    expect(judge('dq', 'float32', ref.subarray(0, 3), ref, ref).ok).toBe(false);
  });

  it('requires NaN exactly where the reference is NaN (NaN in, NaN out)', () => {
    const refNaN = Float64Array.from([1, NaN, 0.5, -Infinity]);
    expect(
      judge('out', 'float32', Float64Array.from([1, NaN, 0.5, -Infinity]), refNaN, ref, { poisoned: true }).ok,
    ).toBe(true);
    // A NaN row disguised as fully masked: the lse of defect 2.
    const v = judge('logsumexp', 'float32', Float64Array.from([1, -Infinity, 0.5, -Infinity]), refNaN, ref, {
      poisoned: true,
    });
    expect(v.message).toMatch(/reference is NaN at \[1\]/);
  });

  it('extraNaN allows NaN where the reference is finite, never a number where it is NaN', () => {
    const refNaN = Float64Array.from([1, NaN, 0.5, 2]);
    expect(
      judge('dk', 'float32', Float64Array.from([NaN, NaN, 0.5, 2]), refNaN, refNaN, { extraNaN: true, poisoned: true })
        .ok,
    ).toBe(true);
    expect(
      judge('dk', 'float32', Float64Array.from([1, 0, 0.5, 2]), refNaN, refNaN, { extraNaN: true, poisoned: true }).ok,
    ).toBe(false);
  });
});

// The gradient allowance (naive.ts, GradientAllowance) on the case of issue 25's flash-cuda finding:
// one key per row, dropout, bf16. The reference gradient of q is exactly 0 there (softmax over one
// key), and FlashAttention's Delta = dO . O from the output stored in bf16 leaves dq = scale *
// (dO . (O - bf16(O))) * k, about a bf16 ulp of dO . O: the rule must pass that and still fail a
// gradient whose Delta comes from an output rounded more coarsely. The allowance is a bound on the
// stored rounding (u |dO| . |O|), about sqrt(64) = 8 times its typical effect here, so 4 significant
// bits (16x bf16's rounding) is where this input starts to fail, and 5 bits still passes.
describe('the gradient allowance for FlashAttention-form backwards', () => {
  const spec: CaseSpec = {
    name: 'sk1-dropout',
    dtype: 'bfloat16',
    batch: 2,
    headsQ: 2,
    headsKV: 2,
    seqQ: 17,
    seqK: 1,
    headDim: 64,
    headDimV: 64,
    layout: 'bhsd',
    dropoutP: 0.3,
  };
  const x = makeInputs(spec, 7n, { type: 'cpu', index: 0 }).values;
  const dropout = { seed: 11n, offset: 0 };
  const ref = naiveAttention({ ...spec, dtype: 'float64' }, x, dropout, true);
  const naive = naiveAttention(spec, x, dropout, true);
  const round = (bits: number) => (v: number) => {
    if (v === 0 || !Number.isFinite(v)) return v;
    const e = 2 ** (Math.floor(Math.log2(Math.abs(v))) - bits + 1);
    return Math.round(v / e) * e;
  };
  /** dq of the fused form with O rounded by `r`: dS_i = dO_i . (O_i - r(O_i)) for the one key (P = 1), dq_i = scale dS_i k_0. */
  const fusedDq = (r: (v: number) => number) => {
    const D = spec.headDim;
    const dq = new Float64Array(ref.dq.length);
    for (let row = 0; row < dq.length / D; row++) {
      const head = Math.floor(row / spec.seqQ); // b * Hq + h; K has the same heads (Hk = Hq), one key each
      let ds = 0;
      for (let c = 0; c < D; c++) ds += x.gradOut[row * D + c]! * (ref.out[row * D + c]! - r(ref.out[row * D + c]!));
      for (let d = 0; d < D; d++) dq[row * D + d] = (ds * x.k[head * D + d]!) / Math.sqrt(D);
    }
    return dq;
  };

  it('the reference and the naive gradient are exactly 0 (the naive form cancels), so the rule without the allowance is the slack alone', () => {
    expect(ref.dq.every((g) => g === 0)).toBe(true);
    expect(naive.dq.every((g) => g === 0)).toBe(true);
  });

  it('passes dq from a bf16-stored output, which fails without the allowance', () => {
    const got = fusedDq(round(8));
    expect(Math.max(...got.map(Math.abs))).toBeGreaterThan(DEFAULT_SLACK.bfloat16);
    expect(judge('dq', 'bfloat16', got, ref.dq, naive.dq).ok).toBe(false);
    const v = judge('dq', 'bfloat16', got, ref.dq, naive.dq, { allowance: naive.allowance!.dq });
    expect(v.ok, v.message).toBe(true);
  });

  it('fails dq from an output rounded to 4 significant bits (passes 5)', () => {
    const v = judge('dq', 'bfloat16', fusedDq(round(4)), ref.dq, naive.dq, { allowance: naive.allowance!.dq });
    expect(v.ok).toBe(false);
    expect(v.message).toMatch(/dq: error \(beyond 2 x its allowance\) .* > bound/);
    expect(judge('dq', 'bfloat16', fusedDq(round(5)), ref.dq, naive.dq, { allowance: naive.allowance!.dq }).ok).toBe(
      true,
    );
  });

  it('is finite and 0 only where no gradient flows', () => {
    const a = naive.allowance!;
    for (const g of [a.dq, a.dk, a.dv]) expect(g.every((e) => Number.isFinite(e) && e >= 0)).toBe(true);
    expect(a.dq.some((e) => e > 0)).toBe(true);
  });
});
