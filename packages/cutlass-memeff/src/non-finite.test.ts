// Non-finite inputs on memeff-cuda against cpu-math (issue 25, defect 2), on a GPU host; elsewhere
// skipped with the reason printed. NaN in q, k or an additive mask gives NaN logsumexp and output
// (never the fully masked -inf); -Inf in one element of k leaves finite what the reference leaves
// finite; +Inf in v gives +Inf where the reference does. The last test runs each planted value
// through the conformance harness (runCase): forward and backward against cpu-math in float64 with
// the fuzz suite's rules for poisoned inputs, so the finite elements meet the accuracy rule too and
// the gradients keep every NaN of the reference with no wrong number or infinity.
import '@attn/cpu';
import { parseDevice, randn, sdpaForward, tensor } from '@attn/core';
import type { DeviceLike, FloatDType, SdpaOptions, Tensor } from '@attn/core';
import { describeWhereRunnable, runCase } from '@attn/conformance';
import type { CaseSpec, PoisonSpec } from '@attn/conformance';
import { describe, expect, it } from 'vitest';
import { gpuEnv } from './gpu-env.js';
import './index.js';

const env = gpuEnv();

/** One character per element: N (NaN), + / - (infinities), . (finite). */
const pattern = (t: Tensor) =>
  Array.from(t.toFloat64Array(), (x) =>
    Number.isNaN(x) ? 'N' : x === Infinity ? '+' : x === -Infinity ? '-' : '.',
  ).join('');

function poisoned(shape: number[], dtype: FloatDType, seed: number, at: number | null, value: number): Float64Array {
  const a = randn(shape, { dtype: 'float64', seed }).toFloat64Array();
  if (at !== null) a[at] = value;
  return a;
}

/** memeff-cuda and cpu-math on the same values; returns both forward results. */
function both(dtype: FloatDType, where: 'q' | 'k' | 'v' | 'mask' | null, value: number, at = 8 + 3) {
  const S = 37;
  const D = 64;
  const vals = {
    q: poisoned([1, 2, S, D], dtype, 1, where === 'q' ? at : null, value),
    k: poisoned([1, 2, S, D], dtype, 2, where === 'k' ? at : null, value),
    v: poisoned([1, 2, S, D], dtype, 3, where === 'v' ? at : null, value),
    mask: poisoned([S, S], 'float32', 4, where === 'mask' ? at : null, value),
  };
  const run = (device: DeviceLike, dt: FloatDType, backend: string) => {
    const t = (a: Float64Array, shape: number[], d: FloatDType | 'float32') => tensor(a, shape, { dtype: d, device });
    const opts: SdpaOptions = {
      backends: [backend],
      ...(where === 'mask' ? { attnMask: t(vals.mask, [S, S], dt) } : {}),
    };
    return sdpaForward(t(vals.q, [1, 2, S, D], dt), t(vals.k, [1, 2, S, D], dt), t(vals.v, [1, 2, S, D], dt), opts);
  };
  return { got: run('cuda:0', dtype, 'memeff-cuda'), ref: run('cpu', 'float64', 'cpu-math') };
}

describeWhereRunnable(`memeff-cuda non-finite inputs`, env.ok ? null : env.reason, () => {
  describe('memeff-cuda non-finite inputs, against cpu-math', () => {
    const dtypes: FloatDType[] = ['float32', 'float16', 'bfloat16'];
    it.each(dtypes)('%s: NaN / +Inf in q, k or the mask give NaN lse and out where the reference does', (dtype) => {
      for (const [where, value] of [
        ['q', NaN],
        ['k', NaN],
        ['mask', NaN],
        ['q', Infinity],
        ['mask', Infinity],
      ] as const) {
        const { got, ref } = both(dtype, where, value);
        expect(pattern(got.logsumexp), `${where}=${value} lse`).toBe(pattern(ref.logsumexp));
        expect(pattern(got.out), `${where}=${value} out`).toBe(pattern(ref.out));
      }
    });

    it.each(dtypes)('%s: -Inf in one element of k leaves finite what the reference leaves finite', (dtype) => {
      const { got, ref } = both(dtype, 'k', -Infinity);
      expect(pattern(got.logsumexp)).toBe(pattern(ref.logsumexp));
      expect(pattern(got.out)).toBe(pattern(ref.out));
    });

    it.each(dtypes)('%s: +Inf in v gives +Inf where the reference does', (dtype) => {
      const { got, ref } = both(dtype, 'v', Infinity);
      expect(pattern(got.out)).toBe(pattern(ref.out));
    });

    // The planted values of the tests above and the other infinities, forward and backward.
    const planted: [PoisonSpec['tensor'], number][] = [
      ['q', NaN],
      ['k', NaN],
      ['v', NaN],
      ['mask', NaN],
      ['q', Infinity],
      ['q', -Infinity],
      ['k', Infinity],
      ['k', -Infinity],
      ['v', Infinity],
      ['v', -Infinity],
      ['mask', Infinity],
    ];
    it.each(dtypes)(
      '%s: each planted value, forward and backward, meets the accuracy rule against cpu-math (runCase)',
      (dtype) => {
        for (const [where, value] of planted) {
          const S = 37;
          const spec: CaseSpec = {
            name: `${dtype} ${where}[11]=${value}`,
            dtype,
            batch: 1,
            headsQ: 2,
            headsKV: 2,
            seqQ: S,
            seqK: S,
            headDim: 64,
            headDimV: 64,
            layout: 'bhsd',
            ...(where === 'mask' ? { mask: { kind: 'additive', shape: [S, S] } } : {}),
            poison: [{ tensor: where, index: 8 + 3, value }],
          };
          const outcome = runCase('memeff-cuda', spec, 25n, parseDevice('cuda:0'));
          expect(outcome.ran, spec.name).toBe('forward+backward');
          const failed = outcome.ran === 'declined' ? [] : outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
          expect(failed, spec.name).toEqual([]);
        }
      },
    );
  });
});
