// Small helpers for cpu-math's tests: float64 tensors, calls pinned to cpu-math, and closeness checks.
import { randn, sdpaBackward, sdpaForward, sdpaVarlen, tensor } from '@attn/core';
import type { ForwardResult, Gradients, SdpaOptions, Tensor, VarlenOptions } from '@attn/core';
import { maxAbsError } from '@attn/core/testing';
import { naiveAttention } from '@attn/conformance';
import type { CaseSpec, NaiveDropout } from '@attn/conformance';
import { expect } from 'vitest';
import '../../src/index.js';

export function f64(values: ArrayLike<number>, shape: readonly number[]): Tensor {
  return tensor(values, shape, { dtype: 'float64' });
}

/** N(0, 1) float64 values; the seed makes each test reproducible. */
export function normal(shape: readonly number[], seed: number): Tensor {
  return randn(shape, { dtype: 'float64', seed });
}

export interface Run {
  readonly fwd: ForwardResult;
  readonly grads: Gradients;
}

/** gradOut as given, or drawn from a seed in the output's shape and dtype. */
function gradFor(fwd: ForwardResult, gradOut: Tensor | number): Tensor {
  return typeof gradOut === 'number' ? randn(fwd.out.shape, { dtype: fwd.out.dtype, seed: gradOut }) : gradOut;
}

/** Forward and backward on cpu-math. */
export function runMath(q: Tensor, k: Tensor, v: Tensor, opts: SdpaOptions = {}, gradOut: Tensor | number = 99): Run {
  const fwd = sdpaForward(q, k, v, { ...opts, backends: ['cpu-math'], requiresGrad: true });
  return { fwd, grads: sdpaBackward(gradFor(fwd, gradOut), fwd) };
}

export function runMathVarlen(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: VarlenOptions,
  gradOut: Tensor | number = 99,
): Run {
  const fwd = sdpaVarlen(q, k, v, { ...opts, backends: ['cpu-math'], requiresGrad: true });
  return { fwd, grads: sdpaBackward(gradFor(fwd, gradOut), fwd) };
}

function values(t: Tensor | Float64Array): Float64Array {
  return t instanceof Float64Array ? t : t.toFloat64Array();
}

/** max |got - want| <= tol * max(1, max |want|); equal infinities match, NaN never does. */
export function expectClose(got: Tensor | Float64Array, want: Tensor | Float64Array, what: string, tol = 1e-12): void {
  const g = values(got);
  const w = values(want);
  expect(g.length, `${what}: element count`).toBe(w.length);
  let scale = 1;
  for (const x of w) if (Number.isFinite(x)) scale = Math.max(scale, Math.abs(x));
  const err = maxAbsError(g, w);
  expect(err, `${what}: max error ${err} (allowed ${tol * scale})`).toBeLessThanOrEqual(tol * scale);
}

/** Forward outputs and every gradient of two runs agree. */
export function expectSameRun(got: Run, want: Run, what: string, tol = 1e-12): void {
  expectClose(got.fwd.out, want.fwd.out, `${what}: out`, tol);
  expectClose(got.fwd.logsumexp, want.fwd.logsumexp, `${what}: logsumexp`, tol);
  expectClose(got.grads.dq, want.grads.dq, `${what}: dq`, tol);
  expectClose(got.grads.dk, want.grads.dk, `${what}: dk`, tol);
  expectClose(got.grads.dv, want.grads.dv, `${what}: dv`, tol);
}

/**
 * The conformance suite's naive implementation (naive.ts) in float64: attention written out with the
 * whole score matrix, independently of cpu-math, for contiguous [B, H, S, D] inputs. `features` are
 * the case's options (scale, causal, softcap, mask, ...); its out and logsumexp (float32, as every
 * backend's).
 */
export function naiveFloat64(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  features: Partial<CaseSpec> = {},
  extra: { readonly mask?: Tensor; readonly dropout?: NaiveDropout } = {},
): { out: Float64Array; lse: Float64Array } {
  const [B, H, Sq, D] = q.shape as [number, number, number, number];
  const spec: CaseSpec = {
    name: 'naive',
    dtype: 'float64',
    batch: B,
    headsQ: H,
    headsKV: k.shape[1]!,
    seqQ: Sq,
    seqK: k.shape[2]!,
    headDim: D,
    headDimV: v.shape[3]!,
    layout: 'bhsd',
    ...features,
  };
  const values = {
    q: q.contiguous().toFloat64Array(),
    k: k.contiguous().toFloat64Array(),
    v: v.contiguous().toFloat64Array(),
    gradOut: new Float64Array(0),
    mask: extra.mask ? extra.mask.contiguous().toFloat64Array() : null,
    slopes: null,
    paged: null,
  };
  const r = naiveAttention(spec, values, extra.dropout ?? null, false);
  return { out: r.out, lse: r.lse };
}
