// Non-finite inputs (docs/ARCHITECTURE.md, semantics): NaN in gives NaN out, in the output and in the logsumexp; -inf
// logsumexp means "every key masked" and nothing else. cpu-flash must give cpu-math's NaN/Inf
// pattern element for element, forward and backward, on every SIMD level this machine runs.
import { normalizeParams, randn, tensor } from '@attn/core';
import type { FloatDType, SdpaOptions, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import { addon } from './native.js';

const load = addon();
const isas = load.ok ? load.addon.buildInfo('auto').runnableIsas : [];

/** One character per element: N (NaN), + / - (infinities), . (finite). */
function pattern(t: Tensor): string {
  return Array.from(t.toFloat64Array(), (x) =>
    Number.isNaN(x) ? 'N' : x === Infinity ? '+' : x === -Infinity ? '-' : '.',
  ).join('');
}

/** A copy of t with element `index` (logical order) set to `value`. */
function poisoned(t: Tensor, index: number, value: number): Tensor {
  const a = t.toFloat64Array();
  a[index] = value;
  return tensor(Array.from(a), t.shape, { dtype: t.dtype });
}

/**
 * Gradients: every NaN of the reference is NaN here, and elsewhere the same finite/Inf class. The
 * kernel's dense products over a causal diagonal tile multiply an invisible key's zero gradient with
 * its (NaN) input, so a NaN may reach an element the reference leaves finite; never the reverse.
 */
function gradientPatternOk(want: string, got: string): boolean {
  if (want.length !== got.length) return false;
  for (let e = 0; e < want.length; e++) if (want[e] !== got[e] && got[e] !== 'N') return false;
  return true;
}

type Where = 'q' | 'k' | 'v' | 'mask';
interface Poison {
  readonly where: Where;
  readonly value: number;
  readonly mask?: 'additive' | 'bool';
  readonly causal?: boolean;
}

const POISONS: Poison[] = [
  { where: 'q', value: NaN },
  { where: 'q', value: Infinity },
  { where: 'q', value: NaN, causal: true },
  { where: 'k', value: NaN },
  { where: 'k', value: -Infinity },
  { where: 'k', value: NaN, mask: 'bool' },
  { where: 'k', value: NaN, causal: true },
  { where: 'v', value: Infinity },
  { where: 'v', value: NaN },
  { where: 'mask', value: NaN, mask: 'additive' },
  { where: 'mask', value: Infinity, mask: 'additive' },
];

function call(dtype: FloatDType, S: number, poison: Poison) {
  const D = 8;
  let q = randn([1, 2, S, D], { dtype, seed: 1 });
  let k = randn([1, 2, S, D], { dtype, seed: 2 });
  let v = randn([1, 2, S, D], { dtype, seed: 3 });
  // Row 1 of head 0 (q), key 1 of head 0 (k, v): the first element of each.
  if (poison.where === 'q') q = poisoned(q, D, poison.value);
  if (poison.where === 'k') k = poisoned(k, D + 1, poison.value);
  if (poison.where === 'v') v = poisoned(v, D + 1, poison.value);
  const opts: SdpaOptions = { isCausal: poison.causal ?? false, requiresGrad: true };
  if (poison.mask === 'additive') {
    const m = randn([S, S], { dtype: 'float32', seed: 4 });
    opts.attnMask = poison.where === 'mask' ? poisoned(m, S + 2, poison.value) : m;
  } else if (poison.mask === 'bool') {
    // Key 1 masked for every row: a NaN there must not reach the output.
    opts.attnMask = tensor(
      Array.from({ length: S * S }, (_, e) => (e % S === 1 ? 0 : 1)),
      [S, S],
      { dtype: 'bool' },
    );
  }
  return normalizeParams(q, k, v, opts);
}

describe.skipIf(!load.ok)('cpu-flash non-finite inputs, against cpu-math', () => {
  it.each(isas)('isa %s: forward lse and out, backward dq, dk, dv', (isa) => {
    const flash = createCpuFlashBackend({ isa: isa as 'auto', threads: 2 });
    const mismatches: string[] = [];
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      for (const poison of POISONS) {
        // 3 keys: one key block; 70: several key blocks and query rows past the first tile.
        for (const S of [3, 70]) {
          const p = call(dtype, S, poison);
          const ref = cpuMathBackend.forward(p);
          const got = flash.forward(p);
          const gradOut = randn(ref.out.shape, { dtype, seed: 5 });
          const refG = cpuMathBackend.backward!(p, ref, gradOut);
          const gotG = flash.backward!(p, got, gradOut);
          const pairs: [string, Tensor, Tensor][] = [
            ['lse', ref.logsumexp, got.logsumexp],
            ['out', ref.out, got.out],
            ['dq', refG.dq, gotG.dq],
            ['dk', refG.dk, gotG.dk],
            ['dv', refG.dv, gotG.dv],
          ];
          for (const [name, a, b] of pairs) {
            const ok =
              name === 'lse' || name === 'out' ? pattern(a) === pattern(b) : gradientPatternOk(pattern(a), pattern(b));
            if (!ok) {
              mismatches.push(
                `${dtype} S=${S} ${JSON.stringify({ ...poison, value: String(poison.value) })} ${name}: want ${pattern(a).slice(0, 48)} got ${pattern(b).slice(0, 48)}`,
              );
            }
          }
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('a NaN in q reaches dv in the backward', () => {
    const flash = createCpuFlashBackend({ threads: 1 });
    const p = call('float32', 3, { where: 'q', value: NaN });
    const fwd = flash.forward(p);
    expect(fwd.logsumexp.toFloat64Array()[1]).toBeNaN();
    const grads = flash.backward!(p, fwd, randn(fwd.out.shape, { dtype: 'float32', seed: 5 }));
    // Row 1 of head 0 sees every key: dv of head 0 is NaN everywhere, head 1 finite.
    const dv = grads.dv.toFloat64Array();
    expect(dv.slice(0, 3 * 8).every(Number.isNaN)).toBe(true);
    expect(dv.slice(3 * 8).every(Number.isFinite)).toBe(true);
  });

  it.each(isas)(
    'isa %s: huge logits (a q element of 1e12 .. 1e20) give the reference one-hot softmax, not l = 0',
    (isa) => {
      const flash = createCpuFlashBackend({ isa: isa as 'auto', threads: 1 });
      for (const value of [1e12, 1e16, 1e20]) {
        for (const scale of [0.5, -0.5]) {
          const q = poisoned(randn([1, 1, 4, 72], { seed: 1 }), 72 + 44, value);
          const p = normalizeParams(q, randn([1, 1, 29, 72], { seed: 2 }), randn([1, 1, 29, 72], { seed: 3 }), {
            scale,
          });
          const ref = cpuMathBackend.forward(p);
          const got = flash.forward(p);
          expect(pattern(got.logsumexp), `${value} scale ${scale}`).toBe(pattern(ref.logsumexp));
          const [a, b] = [got.out.toFloat64Array(), ref.out.toFloat64Array()];
          expect(Math.max(...a.map((x, n) => Math.abs(x - b[n]!))), `${value} scale ${scale}`).toBeLessThan(1e-5);
        }
      }
    },
  );

  it.each(isas)('isa %s: softcap 30 keeps logits within float32 rounding (tanh near 0 without cancellation)', (isa) => {
    const flash = createCpuFlashBackend({ isa: isa as 'auto', threads: 1 });
    // One key: each row's logsumexp is its logit, 30 tanh(s / 30), s of order 1 (y = s / 30 near 0).
    const p = normalizeParams(
      randn([1, 2, 64, 8], { seed: 4 }),
      randn([1, 2, 1, 8], { seed: 5 }),
      randn([1, 2, 1, 8], { seed: 6 }),
      { softcap: 30 },
    );
    const [a, b] = [flash.forward(p).logsumexp.toFloat64Array(), cpuMathBackend.forward(p).logsumexp.toFloat64Array()];
    // float32 resolves logits of a few units to ~2.4e-7; the quotient form of tanh was ~1e-6 off.
    expect(Math.max(...a.map((x, n) => Math.abs(x - b[n]!)))).toBeLessThan(5e-7);
  });
});
