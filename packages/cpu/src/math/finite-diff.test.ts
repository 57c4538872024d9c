// Backward against central finite differences in float64, one case per feature. For the loss
// L = sum(gradOut * out), the directional derivative of L along a random direction U of one input
// must equal sum(grad * U); the numeric one is (L(x + hU) - L(x - hU)) / 2h.
import { sdpaBackward, sdpaForward, sdpaVarlen, tensor } from '@attn/core';
import type { ForwardResult, SdpaOptions, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { f64, normal } from '../../test/math/helpers.js';

interface FdCase {
  readonly name: string;
  readonly q: readonly number[];
  readonly k: readonly number[];
  readonly v: readonly number[];
  /** Transposed [B, S, H, D] storage for q, k and v. */
  readonly strided?: boolean;
  readonly mask?: { readonly kind: 'bool' | 'additive'; readonly shape: readonly number[] };
  readonly slopes?: readonly number[];
  readonly opts?: SdpaOptions;
  /** Packed varlen with these sequence lengths (q/k/v shapes are [total, H, D]). */
  readonly varlen?: { readonly q: readonly number[]; readonly k: readonly number[] };
}

const dense = (sq: number, sk: number, hq = 2, hk = hq, d = 4, dv = 3) => ({
  q: [2, hq, sq, d],
  k: [2, hk, sk, d],
  v: [2, hk, sk, dv],
});

const CASES: FdCase[] = [
  { name: 'plain', ...dense(5, 7) },
  { name: 'scale, Dv = D', ...dense(5, 7, 2, 2, 4, 4), opts: { scale: 0.61 } },
  { name: 'bool mask [B, 1, Sq, Sk] with an empty row', ...dense(5, 7), mask: { kind: 'bool', shape: [2, 1, 5, 7] } },
  {
    name: 'additive mask [1, Hq, Sq, Sk] with -inf entries',
    ...dense(5, 7),
    mask: { kind: 'additive', shape: [1, 2, 5, 7] },
  },
  { name: 'additive mask [Sq, 1] (broadcast over keys)', ...dense(5, 7), mask: { kind: 'additive', shape: [5, 1] } },
  { name: 'causal upper-left, Sq < Sk', ...dense(4, 7), opts: { isCausal: true } },
  { name: 'causal upper-left, Sq > Sk', ...dense(7, 4), opts: { isCausal: true } },
  { name: 'causal lower-right, Sq < Sk', ...dense(4, 7), opts: { isCausal: true, alignment: 'lowerRight' } },
  {
    name: 'causal lower-right, Sq > Sk (empty rows)',
    ...dense(7, 4),
    opts: { isCausal: true, alignment: 'lowerRight' },
  },
  { name: 'window [2, 1]', ...dense(6, 8), opts: { window: [2, 1] } },
  { name: 'window [-1, 0] lower-right', ...dense(6, 8), opts: { window: [-1, 0], alignment: 'lowerRight' } },
  { name: 'ALiBi [Hq]', ...dense(5, 7), slopes: [2] },
  {
    name: 'ALiBi [B, Hq] + causal lower-right',
    ...dense(5, 7),
    slopes: [2, 2],
    opts: { isCausal: true, alignment: 'lowerRight' },
  },
  { name: 'softcap', ...dense(5, 7), opts: { softcap: 1.5, scale: 1.3 } },
  { name: 'dropout', ...dense(5, 7), opts: { dropoutP: 0.3, dropoutSeed: 77n, dropoutOffset: 3 } },
  { name: 'dropout + causal', ...dense(6, 6), opts: { dropoutP: 0.4, dropoutSeed: 78n, isCausal: true } },
  { name: 'GQA 4 / 2', ...dense(5, 7, 4, 2), opts: { enableGqa: true } },
  { name: 'MQA 3 / 1, Dv != D', ...dense(5, 7, 3, 1, 4, 6), opts: { enableGqa: true } },
  { name: 'strided [B, S, H, D] inputs', ...dense(5, 7), strided: true, opts: { isCausal: true } },
  {
    name: 'varlen + GQA + causal lower-right + dropout',
    q: [9, 4, 4],
    k: [12, 2, 4],
    v: [12, 2, 3],
    varlen: { q: [2, 6, 1], k: [4, 6, 2] },
    opts: { enableGqa: true, isCausal: true, alignment: 'lowerRight', dropoutP: 0.25, dropoutSeed: 9n },
  },
  {
    name: 'everything: additive mask, softcap, ALiBi, window, dropout, GQA',
    ...dense(6, 9, 4, 2),
    mask: { kind: 'additive', shape: [2, 4, 6, 9] },
    slopes: [4],
    opts: { softcap: 2, window: [3, 2], alignment: 'lowerRight', dropoutP: 0.2, dropoutSeed: 5n, enableGqa: true },
  },
];

const H_STEP = 1e-5;
const TOL = 1e-7;

/** [B, H, S, D] values as a transposed view of [B, S, H, D] storage. */
function stridedView(values: Float64Array, shape: readonly number[]): Tensor {
  const [B, H, S, D] = shape as [number, number, number, number];
  const physical = new Float64Array(values.length);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let s = 0; s < S; s++)
        for (let d = 0; d < D; d++) physical[((b * S + s) * H + h) * D + d] = values[((b * H + h) * S + s) * D + d]!;
  return f64(physical, [B, S, H, D]).transpose(1, 2);
}

function setup(c: FdCase) {
  const x = {
    q: normal(c.q, 1).toFloat64Array(),
    k: normal(c.k, 2).toFloat64Array(),
    v: normal(c.v, 3).toFloat64Array(),
    mask: c.mask ? normal(c.mask.shape, 4).toFloat64Array() : null,
  };
  if (c.mask?.kind === 'bool') x.mask = x.mask!.map((z, n) => (z > -0.8 && n >= 7 ? 1 : 0)); // n < 7: row 0 empty
  if (c.mask?.kind === 'additive') x.mask = x.mask!.map((z) => (z < -1.4 ? -Infinity : z));
  const slopes = c.slopes
    ? tensor(
        normal(c.slopes, 5)
          .toFloat32Array()
          .map((s) => Math.abs(s)),
        c.slopes,
        { dtype: 'float32' },
      )
    : null;
  const cu = (lens: readonly number[]) =>
    tensor([0, ...lens.map((_, i) => lens.slice(0, i + 1).reduce((a, b) => a + b))], [lens.length + 1], {
      dtype: 'int32',
    });

  const call = (
    q: Float64Array,
    k: Float64Array,
    v: Float64Array,
    mask: Float64Array | null,
    strided: boolean,
  ): ForwardResult => {
    const place = (vals: Float64Array, shape: readonly number[]) =>
      strided ? stridedView(vals, shape) : f64(vals, shape);
    const opts = { ...c.opts, alibiSlopes: slopes, backends: ['cpu-math'], requiresGrad: true };
    if (c.varlen) {
      return sdpaVarlen(f64(q, c.q), f64(k, c.k), f64(v, c.v), {
        ...opts,
        cuSeqlensQ: cu(c.varlen.q),
        cuSeqlensK: cu(c.varlen.k),
        maxSeqlenQ: Math.max(...c.varlen.q),
        maxSeqlenK: Math.max(...c.varlen.k),
      });
    }
    const attnMask =
      mask && c.mask ? tensor(mask, c.mask.shape, { dtype: c.mask.kind === 'bool' ? 'bool' : 'float64' }) : null;
    return sdpaForward(place(q, c.q), place(k, c.k), place(v, c.v), { ...opts, attnMask });
  };
  return { x, call };
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let n = 0; n < a.length; n++) if (b[n] !== 0) s += a[n]! * b[n]!;
  return s;
}

describe('backward matches central finite differences (float64)', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const { x, call } = setup(c);
      const fwd = call(x.q, x.k, x.v, x.mask, c.strided ?? false);
      const gradOut = normal(fwd.out.shape, 6);
      const g = gradOut.toFloat64Array();
      const grads = sdpaBackward(gradOut, fwd);
      const loss = (q: Float64Array, k: Float64Array, v: Float64Array, mask: Float64Array | null) =>
        dot(call(q, k, v, mask, false).out.toFloat64Array(), g);
      const inputs: [string, Float64Array, Tensor | undefined][] = [
        ['q', x.q, grads.dq],
        ['k', x.k, grads.dk],
        ['v', x.v, grads.dv],
      ];
      if (c.mask?.kind === 'additive') inputs.push(['mask', x.mask!, grads.dbias]);
      expect(grads.dbias === undefined).toBe(c.mask?.kind !== 'additive');
      inputs.forEach(([name, value, grad], n) => {
        const u = normal([value.length], 10 + n)
          .toFloat64Array()
          .map((z, i) => (Number.isFinite(value[i]!) ? z : 0));
        const at = (sign: number) => {
          const moved = value.map((z, i) => z + sign * H_STEP * u[i]!);
          const args = { q: x.q, k: x.k, v: x.v, mask: x.mask, [name]: moved };
          return loss(args.q, args.k, args.v, args.mask);
        };
        const numeric = (at(1) - at(-1)) / (2 * H_STEP);
        const analytic = dot(grad!.toFloat64Array(), u);
        expect(
          Math.abs(numeric - analytic),
          `d loss / d ${name}: numeric ${numeric}, analytic ${analytic}`,
        ).toBeLessThanOrEqual(TOL * Math.max(1, Math.abs(analytic)));
      });
    });
  }
});
