// Non-finite inputs on memeff-cuda against cpu-math (issue 25, defect 2), on a GPU host; elsewhere
// skipped with the reason printed. NaN in q, k or an additive mask gives NaN logsumexp and output
// (never the fully masked -inf); -Inf in one element of k leaves finite what the reference leaves
// finite; +Inf in v gives +Inf where the reference does.
import '@attn/cpu';
import { randn, sdpaForward, tensor } from '@attn/core';
import type { DeviceLike, FloatDType, SdpaOptions, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { gpuEnv } from './gpu-env.js';
import './index.js';

const env = gpuEnv();

/** One character per element: N (NaN), + / - (infinities), . (finite). */
const pattern = (t: Tensor) => Array.from(t.toFloat64Array(), (x) => (Number.isNaN(x) ? 'N' : x === Infinity ? '+' : x === -Infinity ? '-' : '.')).join('');

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
    const opts: SdpaOptions = { backends: [backend], ...(where === 'mask' ? { attnMask: t(vals.mask, [S, S], dt) } : {}) };
    return sdpaForward(t(vals.q, [1, 2, S, D], dt), t(vals.k, [1, 2, S, D], dt), t(vals.v, [1, 2, S, D], dt), opts);
  };
  return { got: run('cuda:0', dtype, 'memeff-cuda'), ref: run('cpu', 'float64', 'cpu-math') };
}

if (!env.ok) {
  console.log(`memeff-cuda non-finite inputs skipped: ${env.reason}`);
  describe.skip(`memeff-cuda non-finite inputs (skipped: ${env.reason})`, () => {
    it('needs a CUDA device', () => {});
  });
} else {
  describe('memeff-cuda non-finite inputs, against cpu-math', () => {
    const dtypes: FloatDType[] = ['float32', 'float16', 'bfloat16'];
    it.each(dtypes)('%s: NaN / +Inf in q, k or the mask give NaN lse and out where the reference does', (dtype) => {
      for (const [where, value] of [['q', NaN], ['k', NaN], ['mask', NaN], ['q', Infinity], ['mask', Infinity]] as const) {
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
  });
}
