// Test helpers for cpu-flash: inputs, a cpu-math reference of the same call, and error measures.
import { normalizeParams, normalizeVarlenParams, randn, tensor } from '@attn/core';
import type { FloatDType, SdpaOptions, SdpaParams, Tensor, VarlenOptions } from '@attn/core';

export interface Shape {
  readonly B: number;
  readonly Hq: number;
  readonly Hk: number;
  readonly Sq: number;
  readonly Sk: number;
  readonly D: number;
  readonly Dv: number;
}

/** q, k, v of a shape; 'bshd' makes them transposed views of [B, S, H, D] storage. */
export function inputs(s: Shape, dtype: FloatDType, seed: number, layout: 'bhsd' | 'bshd' = 'bhsd') {
  const make = (h: number, n: number, d: number, k: number) =>
    layout === 'bhsd'
      ? randn([s.B, h, n, d], { dtype, seed: seed * 3 + k })
      : randn([s.B, n, h, d], { dtype, seed: seed * 3 + k }).transpose(1, 2);
  return { q: make(s.Hq, s.Sq, s.D, 0), k: make(s.Hk, s.Sk, s.D, 1), v: make(s.Hk, s.Sk, s.Dv, 2) };
}

export function params(
  s: Shape,
  dtype: FloatDType,
  opts: SdpaOptions = {},
  seed = 1,
  layout: 'bhsd' | 'bshd' = 'bhsd',
): SdpaParams {
  const { q, k, v } = inputs(s, dtype, seed, layout);
  return normalizeParams(q, k, v, { enableGqa: s.Hq !== s.Hk, ...opts });
}

/** Largest |a - b| over finite pairs; Infinity when one is NaN or they disagree on infinities. */
export function maxAbsDiff(a: Tensor, b: Tensor): number {
  const x = a.toFloat64Array();
  const y = b.toFloat64Array();
  if (x.length !== y.length) return Infinity;
  let m = 0;
  for (let i = 0; i < x.length; i++) {
    const u = x[i]!;
    const w = y[i]!;
    if (u === w) continue;
    const d = Math.abs(u - w);
    if (!(d <= m)) m = d;
  }
  return m;
}

/** A float32 [n] tensor of values. */
export const f32 = (values: number[], shape?: number[]) =>
  tensor(values, shape ?? [values.length], { dtype: 'float32' });

/** Absolute tolerance on O(1) outputs per dtype (fp32 kernels accumulate in fp32; halves round once). */
export const TOL: Record<FloatDType, number> = { float64: 1e-9, float32: 2e-5, float16: 4e-3, bfloat16: 3e-2 };

/** Params of a packed varlen call: sequences of the given query and key lengths. */
export function varlenParams(
  lensQ: readonly number[],
  lensK: readonly number[],
  heads: { Hq: number; Hk: number; D: number; Dv: number },
  dtype: FloatDType,
  opts: Omit<VarlenOptions, 'cuSeqlensQ' | 'cuSeqlensK' | 'maxSeqlenQ' | 'maxSeqlenK'> = {},
  seed = 1,
): SdpaParams {
  const cu = (lens: readonly number[]) => lens.reduce<number[]>((a, n) => [...a, a[a.length - 1]! + n], [0]);
  const cuQ = cu(lensQ);
  const cuK = cu(lensK);
  const q = randn([cuQ[cuQ.length - 1]!, heads.Hq, heads.D], { dtype, seed: seed * 3 });
  const k = randn([cuK[cuK.length - 1]!, heads.Hk, heads.D], { dtype, seed: seed * 3 + 1 });
  const v = randn([cuK[cuK.length - 1]!, heads.Hk, heads.Dv], { dtype, seed: seed * 3 + 2 });
  return normalizeVarlenParams(q, k, v, {
    enableGqa: heads.Hq !== heads.Hk,
    ...opts,
    cuSeqlensQ: tensor(cuQ, [cuQ.length], { dtype: 'int32' }),
    cuSeqlensK: tensor(cuK, [cuK.length], { dtype: 'int32' }),
    maxSeqlenQ: Math.max(...lensQ),
    maxSeqlenK: Math.max(...lensK),
  });
}
