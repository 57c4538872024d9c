// cpu-flash with sequsedK (keys used per batch row) against cpu-math, forward and backward, dense and
// varlen, on every SIMD level this CPU runs: a row with no used key, runs of rows with the same count,
// causal lower-right, a window, ALiBi, softcap, dropout and masks (each dbias path); and the gradients
// of unused keys exactly 0 even where the output buffers start out holding NaN.
import { randn, tensor } from '@attn/core';
import type { FloatDType, SdpaOptions, SdpaParams, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import type { CpuFlashIsa } from './backend.js';
import { backwardBuffers, backwardDesc, forwardDesc, forwardOutputs } from './marshal.js';
import { addon } from './native.js';
import { f32, maxAbsDiff, params, TOL, varlenParams } from './testing.js';
import type { Shape } from './testing.js';

const load = addon();
const isas = (load.ok ? load.addon.buildInfo().runnableIsas : []).filter((i) => i !== 'avx512bf16') as CpuFlashIsa[];

const int32 = (xs: readonly number[]) => tensor([...xs], [xs.length], { dtype: 'int32' });

const odd: Shape = { B: 4, Hq: 3, Hk: 3, Sq: 37, Sk: 75, D: 13, Dv: 7 };
const gqa: Shape = { B: 3, Hq: 4, Hk: 2, Sq: 70, Sk: 130, D: 32, Dv: 24 };
// Row 1 uses no key; rows 2 and 3 of odd share a count (one dense problem for both).
const USED_ODD = [40, 0, 75, 75];
const USED_GQA = [1, 129, 0];

const additive = (shape: number[], dtype: FloatDType = 'float32') => {
  const n = shape.reduce((a, b) => a * b, 1);
  return tensor(
    Array.from({ length: n }, (_, i) => (i % 17 === 3 ? -Infinity : Math.cos(i) * 1.5)),
    shape,
    { dtype },
  );
};

const CASES: Array<[string, Shape, readonly number[], SdpaOptions]> = [
  ['plain odd shape', odd, USED_ODD, {}],
  ['gqa causal lower-right', gqa, USED_GQA, { isCausal: true, alignment: 'lowerRight' }],
  ['window lower-right', odd, USED_ODD, { window: [6, 3], alignment: 'lowerRight' }],
  ['causal upper-left + window', gqa, [70, 64, 0], { isCausal: true, window: [20, 0] }],
  [
    'ALiBi per batch and head, lower-right, softcap',
    gqa,
    USED_GQA,
    {
      alibiSlopes: f32(
        Array.from({ length: 12 }, (_, n) => 0.05 + 0.03 * n),
        [3, 4],
      ),
      alignment: 'lowerRight',
      softcap: 4,
    },
  ],
  [
    'dropout, causal lower-right',
    gqa,
    USED_GQA,
    { dropoutP: 0.25, dropoutSeed: 0xdeadbeefcafef00dn, dropoutOffset: 3, isCausal: true, alignment: 'lowerRight' },
  ],
  [
    'bool mask [Sq, Sk]',
    odd,
    USED_ODD,
    {
      attnMask: tensor(
        Array.from({ length: 37 * 75 }, (_, i) => (i % 7 === 0 ? 0 : 1)),
        [37, 75],
        { dtype: 'bool' },
      ),
    },
  ],
  ['additive mask, full shape (dbias per row)', odd, USED_ODD, { attnMask: additive([4, 3, 37, 75]) }],
  [
    'additive mask [Sq, Sk] (dbias summed over rows of different counts)',
    odd,
    USED_ODD,
    { attnMask: additive([37, 75]) },
  ],
  [
    'additive mask [B, 1, Sq, 1] (dbias summed over heads and keys)',
    odd,
    USED_ODD,
    { attnMask: additive([4, 1, 37, 1]) },
  ],
];

function run(p: SdpaParams, isa: CpuFlashIsa | 'auto') {
  const flash = createCpuFlashBackend({ isa, threads: 2 });
  const fwd = flash.forward(p);
  const gradOut = randn(fwd.out.shape, { dtype: p.dtype, seed: 5 });
  const ref = cpuMathBackend.forward(p);
  return {
    fwd,
    ref,
    got: flash.backward!(p, fwd, gradOut),
    want: cpuMathBackend.backward!(p, ref, gradOut),
  };
}

/** Dense rows b, keys [from, to) of a [B, H, S, D] tensor, as numbers. */
function keysOf(t: Tensor, b: number, from: number, to: number): number[] {
  return [
    ...t
      .narrow(0, b, 1)
      .narrow(2, from, to - from)
      .toFloat64Array(),
  ];
}

describe.skipIf(!load.ok)('cpu-flash sequsedK', () => {
  for (const isa of isas) {
    for (const [name, shape, used, opts] of CASES) {
      it(`${isa} float32: ${name}`, () => {
        const p = params(shape, 'float32', { ...opts, sequsedK: int32(used), requiresGrad: true }, 3);
        const { fwd, ref, got, want } = run(p, isa);
        expect(maxAbsDiff(fwd.out, ref.out)).toBeLessThan(TOL.float32);
        expect(maxAbsDiff(fwd.logsumexp, ref.logsumexp)).toBeLessThan(TOL.float32);
        for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(got[k], want[k]), k).toBeLessThan(1e-4);
        expect(got.dbias === undefined).toBe(want.dbias === undefined);
        if (got.dbias && want.dbias) expect(maxAbsDiff(got.dbias, want.dbias)).toBeLessThan(1e-4);
        used.forEach((n, b) => {
          for (const t of [got.dk, got.dv])
            expect(
              keysOf(t, b, n, shape.Sk).every((x) => x === 0),
              `row ${b}`,
            ).toBe(true);
        });
        // The row without keys: out 0, lse -inf.
        const empty = used.indexOf(0);
        expect([...fwd.logsumexp.narrow(0, empty, 1).toFloat64Array()].every((x) => x === -Infinity)).toBe(true);
        expect([...fwd.out.narrow(0, empty, 1).toFloat64Array()].every((x) => x === 0)).toBe(true);
      });
    }

    it(`${isa} float32: varlen, sequences with no query, no key and no used key; causal lower-right, dropout`, () => {
      const lensQ = [37, 0, 130, 5, 9];
      const lensK = [70, 9, 140, 0, 20];
      const used = [33, 4, 140, 0, 0];
      const p = varlenParams(lensQ, lensK, { Hq: 4, Hk: 2, D: 24, Dv: 16 }, 'float32', {
        isCausal: true,
        alignment: 'lowerRight',
        dropoutP: 0.2,
        dropoutSeed: 5n,
        sequsedK: int32(used),
        requiresGrad: true,
      });
      const { fwd, ref, got, want } = run(p, isa);
      expect(maxAbsDiff(fwd.out, ref.out)).toBeLessThan(TOL.float32);
      expect(maxAbsDiff(fwd.logsumexp, ref.logsumexp)).toBeLessThan(TOL.float32);
      for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(got[k], want[k]), k).toBeLessThan(1e-4);
      let k0 = 0;
      lensK.forEach((n, b) => {
        for (const t of [got.dk, got.dv]) {
          const unused = [...t.narrow(0, k0 + used[b]!, n - used[b]!).toFloat64Array()];
          expect(
            unused.every((x) => x === 0),
            `sequence ${b}`,
          ).toBe(true);
        }
        k0 += n;
      });
    });
  }

  for (const dtype of ['float16', 'bfloat16'] as const) {
    it(`${dtype}: gqa causal lower-right with an additive mask`, () => {
      const p = params(
        gqa,
        dtype,
        {
          isCausal: true,
          alignment: 'lowerRight',
          attnMask: additive([1, 4, 1, 130], dtype),
          sequsedK: int32(USED_GQA),
          requiresGrad: true,
        },
        4,
      );
      const { fwd, ref, got, want } = run(p, 'auto');
      const tol = dtype === 'float16' ? 1e-2 : 8e-2;
      expect(maxAbsDiff(fwd.out, ref.out)).toBeLessThan(TOL[dtype]);
      for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(got[k], want[k]), k).toBeLessThan(tol);
      expect(maxAbsDiff(got.dbias!, want.dbias!)).toBeLessThan(tol);
    });
  }

  it('a row using all its keys equals the call without sequsedK, bit for bit', () => {
    const opts: SdpaOptions = {
      isCausal: true,
      alignment: 'lowerRight',
      dropoutP: 0.1,
      dropoutSeed: 9n,
      requiresGrad: true,
    };
    const withUsed = run(params(gqa, 'float32', { ...opts, sequsedK: int32([130, 130, 130]) }, 6), 'auto');
    const without = run(params(gqa, 'float32', opts, 6), 'auto');
    expect(maxAbsDiff(withUsed.fwd.out, without.fwd.out)).toBe(0);
    for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(withUsed.got[k], without.got[k]), k).toBe(0);
  });

  it("writes out, lse and the unused keys' dk/dv over NaN-filled buffers (the addon owns every element)", () => {
    const native = load.ok ? load.addon : null;
    const p = params(
      odd,
      'float32',
      {
        isCausal: true,
        alignment: 'lowerRight',
        attnMask: additive([37, 75]),
        sequsedK: int32(USED_ODD),
        requiresGrad: true,
      },
      7,
    );
    const fwd = forwardOutputs(p);
    (fwd.out.hostData() as Float32Array).fill(Number.NaN);
    (fwd.logsumexp.hostData() as Float32Array).fill(Number.NaN);
    native!.forward(forwardDesc(p, fwd.out, fwd.logsumexp, 'auto', 2));
    const ref = cpuMathBackend.forward(p);
    expect(maxAbsDiff(fwd.out, ref.out)).toBeLessThan(TOL.float32);
    expect(maxAbsDiff(fwd.logsumexp, ref.logsumexp)).toBeLessThan(TOL.float32);

    const gradOut = randn(fwd.out.shape, { seed: 8 });
    const bufs = backwardBuffers(p);
    for (const t of [bufs.dq, bufs.dk, bufs.dv]) (t.hostData() as Float32Array).fill(Number.NaN);
    bufs.dbias!.fill(Number.NaN);
    native!.backward(backwardDesc(p, fwd, gradOut, bufs, 'auto', 2));
    const want = cpuMathBackend.backward!(p, ref, gradOut);
    expect(maxAbsDiff(bufs.dq, want.dq)).toBeLessThan(1e-4);
    expect(maxAbsDiff(bufs.dk, want.dk)).toBeLessThan(1e-4);
    expect(maxAbsDiff(bufs.dv, want.dv)).toBeLessThan(1e-4);
    expect(maxAbsDiff(f32([...bufs.dbias!], [37, 75]), want.dbias!)).toBeLessThan(1e-4);
    USED_ODD.forEach((n, b) => {
      for (const t of [bufs.dk, bufs.dv])
        expect(
          keysOf(t, b, n, odd.Sk).every((x) => x === 0),
          `row ${b}`,
        ).toBe(true);
    });
  });

  it("the addon rechecks the counts: wrong length, or a count past the row's keys", () => {
    const native = load.ok ? load.addon : null;
    const p = params(odd, 'float32', { sequsedK: int32(USED_ODD) }, 1);
    const outs = forwardOutputs(p);
    const desc = forwardDesc(p, outs.out, outs.logsumexp, 'auto', 1);
    expect(() => native!.forward({ ...desc, sequsedK: new Int32Array([1, 2, 3]) })).toThrow(/sequsedK needs B counts/);
    expect(() => native!.forward({ ...desc, sequsedK: new Int32Array([1, 2, 76, 3]) })).toThrow(
      /sequsedK\[2\] = 76 is outside \[0, 75\]/,
    );
    expect(() => native!.forward({ ...desc, sequsedK: new Int32Array([1, -1, 3, 3]) })).toThrow(/outside/);
    expect(() => native!.forward({ ...desc, sequsedK: new Float32Array(4) as unknown as Int32Array })).toThrow(
      /Int32Array/,
    );
  });
});
