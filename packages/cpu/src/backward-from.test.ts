// sdpaBackwardFrom on the CPU backends against cpu-math's whole-call backward (the conformance rule):
// the keys cut into two blocks, each block's backward with the whole call's out and logsumexp, as a
// ring step runs it (test/conformance/src/backward-from.ts). Fresh random inputs; the seed is in the
// failure message.
import { type BackwardFromCase, backwardFromBlocks, checkBackwardFrom, REFERENCE } from '@attn/conformance';
import { CPU, getBackend, NoBackendError, randomSeed, randn, sdpaBackwardFrom, sdpaForward, tensor } from '@attn/core';
import type { FloatDType, AttnError } from '@attn/core';
import { describe, expect, it } from 'vitest';
import './index.js';

function spec(
  dtype: FloatDType,
  S: number,
  split: number,
  Hq: number,
  Hk: number,
  D: number,
  causal: boolean,
  Dv = D,
): BackwardFromCase {
  return {
    split,
    spec: {
      name: `${dtype} S=${S} split=${split} Hq=${Hq} Hk=${Hk} D=${D} Dv=${Dv}${causal ? ' causal' : ''}`,
      dtype,
      batch: 2,
      headsQ: Hq,
      headsKV: Hk,
      seqQ: S,
      seqK: S,
      headDim: D,
      headDimV: Dv,
      layout: 'bhsd',
      enableGqa: Hq !== Hk,
      causal,
    },
  };
}

const CASES: BackwardFromCase[] = [
  spec('float32', 1, 1, 2, 2, 8, true),
  spec('float32', 17, 9, 4, 2, 8, true),
  spec('float32', 17, 5, 2, 1, 72, false, 24),
  spec('float32', 33, 33, 2, 2, 8, true), // one block: the call's own backward
  spec('bfloat16', 17, 8, 4, 2, 8, true),
  spec('float16', 29, 3, 2, 2, 72, false),
];

function run(backend: string, cases: readonly BackwardFromCase[]): void {
  const skip = getBackend(backend)?.availability();
  for (const c of cases) {
    it.skipIf(!skip?.ok)(
      `${c.spec.name}${skip?.ok ? '' : ` (skipped: ${skip?.ok === false ? skip.reason : ''})`}`,
      () => {
        const seed = randomSeed();
        const failures = checkBackwardFrom(backend, c, seed, CPU).filter((v) => !v.ok);
        expect(
          failures.map((v) => v.message),
          `seed ${seed}`,
        ).toEqual([]);
      },
    );
  }
}

describe('sdpaBackwardFrom: blocks of a row with the whole row out/lse equal the whole backward', () => {
  describe(REFERENCE, () => run(REFERENCE, CASES));
  describe('cpu-flash (float32)', () =>
    run(
      'cpu-flash',
      CASES.filter((c) => c.spec.dtype === 'float32'),
    ));
  // S = 1000, one case: long rows, many of them fully before the cut.
  describe('cpu-flash long row', () => run('cpu-flash', [spec('float32', 1000, 377, 2, 1, 8, true)]));
});

// The given logsumexp is float32 for every dtype (core's), so float64 gets float32-accurate gradients:
// this pins that level rather than claiming the float64 rule.
describe('sdpaBackwardFrom, float64: float32-accurate (the given lse is float32)', () => {
  it('cpu-math, S=17 split 9, causal, GQA', () => {
    const seed = randomSeed();
    const c = spec('float64', 17, 9, 4, 2, 8, true);
    const r = backwardFromBlocks(REFERENCE, c, seed, CPU);
    for (const w of ['dq', 'dk', 'dv'] as const) {
      let err = 0;
      let mag = 1;
      r.ref[w].forEach((x, i) => {
        err = Math.max(err, Math.abs(r.got[w][i]! - x));
        mag = Math.max(mag, Math.abs(x));
      });
      expect(err / mag, `${w}, seed ${seed}`).toBeLessThan(4e-6);
    }
  });
});

describe('sdpaBackwardFrom: what it declines', () => {
  it('cpu-flash declines fp16/bf16 (its delta is its own softmax): selection falls to cpu-math', () => {
    const q = randn([1, 2, 5, 8], { dtype: 'bfloat16' });
    const f = sdpaForward(q, q, q, { backends: [REFERENCE] });
    let err: unknown;
    try {
      sdpaBackwardFrom(q, q, q, f, q, { backends: ['cpu-flash'] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NoBackendError);
    expect((err as NoBackendError).message).toContain('savedOutDeltaFloat32');
    const g = sdpaBackwardFrom(q, q, q, f, q);
    expect(g.dq.shape).toEqual([1, 2, 5, 8]);
  });

  it('NaN in the given lse makes the row NaN; -inf gives it zero gradients', () => {
    const q = randn([1, 1, 3, 8]);
    const f = sdpaForward(q, q, q, { backends: [REFERENCE] });
    const lse = f.logsumexp.toFloat64Array();
    lse[0] = Number.NaN;
    lse[1] = -Infinity;
    const given = { out: f.out, logsumexp: tensor(lse, [1, 1, 3], { dtype: 'float32' }) };
    const g = sdpaBackwardFrom(q, q, q, given, f.out, { backends: [REFERENCE] });
    const dq = g.dq.toFloat64Array();
    expect(dq.slice(0, 8).every(Number.isNaN)).toBe(true);
    expect(Array.from(dq.slice(8, 16))).toEqual(new Array(8).fill(0));
    expect(dq.slice(16, 24).every(Number.isFinite)).toBe(true);
  });

  it('out and lse of the wrong shape, dtype or device are ATTN_SAVED', () => {
    const q = randn([1, 2, 5, 8]);
    const f = sdpaForward(q, q, q);
    const bad = [
      { out: randn([1, 2, 4, 8]), logsumexp: f.logsumexp },
      { out: randn([1, 2, 5, 8], { dtype: 'float64' }), logsumexp: f.logsumexp },
      { out: f.out, logsumexp: randn([1, 2, 5], { dtype: 'float64' }) },
      { out: f.out, logsumexp: randn([1, 5, 2]) },
    ];
    for (const saved of bad) {
      expect(() => sdpaBackwardFrom(q, q, q, saved, f.out)).toThrow(
        expect.objectContaining({ code: 'ATTN_SAVED' }) as AttnError,
      );
    }
  });
});
