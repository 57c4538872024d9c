// Small helpers for cpu-math's tests: float64 tensors, calls pinned to cpu-math, and closeness checks.
import { randn, sdpaBackward, sdpaForward, sdpaVarlen, tensor } from '@attn/core';
import type { ForwardResult, Gradients, SdpaOptions, Tensor, VarlenOptions } from '@attn/core';
import { maxAbsError } from '@attn/core/testing';
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

export function runMathVarlen(q: Tensor, k: Tensor, v: Tensor, opts: VarlenOptions, gradOut: Tensor | number = 99): Run {
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
 * Attention written out in the plainest way, float64, for contiguous [B, H, S, D] inputs with
 * H query heads = kv heads: score(b, h, i, j, dot) gives the final score (-Infinity = masked) from
 * q_i . k_j, and factor(b, h, i, j) multiplies each softmax probability (dropout). Returns out and lse.
 */
export function plainAttention(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  score: (b: number, h: number, i: number, j: number, dot: number) => number,
  factor: (b: number, h: number, i: number, j: number) => number = () => 1,
): { out: Float64Array; lse: Float64Array } {
  const [B, H, Sq, D] = q.shape as [number, number, number, number];
  const Sk = k.shape[2]!;
  const Dv = v.shape[3]!;
  const [Q, K, V] = [q, k, v].map((t) => t.toFloat64Array()) as [Float64Array, Float64Array, Float64Array];
  const out = new Float64Array(B * H * Sq * Dv);
  const lse = new Float64Array(B * H * Sq);
  for (let b = 0; b < B; b++)
    for (let h = 0; h < H; h++)
      for (let i = 0; i < Sq; i++) {
        const s: number[] = [];
        for (let j = 0; j < Sk; j++) {
          let dot = 0;
          for (let d = 0; d < D; d++) dot += Q[((b * H + h) * Sq + i) * D + d]! * K[((b * H + h) * Sk + j) * D + d]!;
          s.push(score(b, h, i, j, dot));
        }
        const max = Math.max(...s);
        const row = (b * H + h) * Sq + i;
        if (max === -Infinity) {
          lse[row] = -Infinity;
          continue;
        }
        const sum = s.reduce((a, x) => a + Math.exp(x - max), 0);
        lse[row] = max + Math.log(sum);
        for (let j = 0; j < Sk; j++) {
          const p = (Math.exp(s[j]! - max) / sum) * factor(b, h, i, j);
          for (let c = 0; c < Dv; c++) out[row * Dv + c] = out[row * Dv + c]! + p * V[((b * H + h) * Sk + j) * Dv + c]!;
        }
      }
  return { out, lse };
}
