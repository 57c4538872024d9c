// sequsedK (keys used per batch row) on a GPU, beyond the conformance cases (whose small shapes all take
// the sm80 kernels): shapes that reach the Hopper forward kernels, split-KV with packed GQA, the
// backward kernels of each head-dim bucket, and varlen; each against cpu-math on the same rounded
// inputs, with a row that uses no key and the dK/dV of unused keys exactly 0. Skipped with the reason
// printed where there is no usable device.
import '@attn/cpu';
import {
  normalizeParams,
  randn,
  sdpaBackward,
  sdpaForward,
  sdpaVarlen,
  type SdpaOptions,
  type Tensor,
  tensor,
} from '@attn/core';
import { expect, it } from 'vitest';
import { deviceProperties } from '@attn/cuda';
import { scaledMaxError as relErr } from '@attn/core/testing';
import { flashCudaBackend, flashForward, planFor } from './index.js';
import { describeWhereRunnable } from '@attn/conformance';

const av = flashCudaBackend.availability();

const TOL = 3e-2; // bf16, relative to the largest reference element
const used = (xs: readonly number[], device: 'cpu' | 'cuda') =>
  tensor([...xs], [xs.length], { dtype: 'int32', device });

type Shape = [number, number, number, number, number, number];

function inputs([b, hq, hk, sq, sk, d]: Shape) {
  const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
  return {
    q: randn([b, hq, sq, d], { ...o, seed: 31 }),
    k: randn([b, hk, sk, d], { ...o, seed: 32 }),
    v: randn([b, hk, sk, d], { ...o, seed: 33 }),
    g: randn([b, hq, sq, d], { ...o, seed: 34 }),
  };
}

/** The same call on cpu-math: every tensor option moved to the CPU. */
function onCpu(opts: SdpaOptions, counts: readonly number[]): SdpaOptions {
  return {
    ...opts,
    alibiSlopes: opts.alibiSlopes?.to('cpu') ?? null,
    sequsedK: used(counts, 'cpu'),
    backends: ['cpu-math'],
  };
}

/** dK or dV rows [n, S) of batch row b, every head: all exactly 0. */
function unusedZero(t: Tensor, b: number, n: number): boolean {
  const S = t.shape[2]!;
  return (
    n === S ||
    [
      ...t
        .narrow(0, b, 1)
        .narrow(2, n, S - n)
        .toFloat64Array(),
    ].every((x) => x === 0)
  );
}

describeWhereRunnable('flash-cuda sequsedK on a GPU', av.ok ? null : av.reason, () => {
  const slopes = () => tensor([0.5, 0.25, 0.4, 0.125], [2, 2], { dtype: 'float32', device: 'cuda' });
  const cases: Array<[string, () => SdpaOptions, Shape, number[]]> = [
    // One key tile of 128: no split-KV, so sm90 devices run the Hopper forward kernel.
    ['lean D128, one key tile', () => ({}), [3, 2, 2, 200, 128, 128], [128, 0, 77]],
    ['plain D64', () => ({}), [3, 2, 2, 130, 300, 64], [300, 0, 77]],
    [
      'causal lower-right D64',
      () => ({ isCausal: true, alignment: 'lowerRight' }),
      [3, 2, 2, 150, 260, 64],
      [1, 259, 0],
    ],
    [
      'window lower-right, ALiBi, softcap D96',
      () => ({ window: [24, 4], alignment: 'lowerRight', alibiSlopes: slopes(), softcap: 6 }),
      [2, 2, 2, 100, 230, 96],
      [230, 57],
    ],
    ['dropout D64', () => ({ dropoutP: 0.3, dropoutSeed: 77n, dropoutOffset: 1 }), [2, 2, 2, 64, 96, 64], [96, 40]],
    ['gqa causal upper-left D256', () => ({ enableGqa: true, isCausal: true }), [2, 4, 2, 70, 150, 256], [0, 100]],
    ['deterministic gqa D128', () => ({ enableGqa: true, deterministic: true }), [2, 4, 2, 100, 130, 128], [130, 3]],
  ];
  for (const [name, opts, shape, counts] of cases) {
    it(`forward and backward match cpu-math: ${name}`, () => {
      const { q, k, v, g } = inputs(shape);
      const all = { ...opts(), requiresGrad: true };
      const fwd = sdpaForward(q, k, v, { ...all, sequsedK: used(counts, 'cuda'), backends: ['flash-cuda'] });
      const grads = sdpaBackward(g, fwd);
      const ref = sdpaForward(q.to('cpu'), k.to('cpu'), v.to('cpu'), onCpu(all, counts));
      const want = sdpaBackward(g.to('cpu'), ref);
      expect(relErr(fwd.out, ref.out)).toBeLessThan(TOL);
      expect(relErr(fwd.logsumexp, ref.logsumexp)).toBeLessThan(TOL);
      for (const key of ['dq', 'dk', 'dv'] as const) expect(relErr(grads[key], want[key]), key).toBeLessThan(TOL);
      counts.forEach((n, b) => {
        expect(unusedZero(grads.dk, b, n) && unusedZero(grads.dv, b, n), `row ${b}`).toBe(true);
        if (n === 0)
          expect([...fwd.logsumexp.narrow(0, b, 1).toFloat64Array()].every((x) => x === -Infinity)).toBe(true);
      });
    });
  }

  const sm90 = av.ok && deviceProperties(0).major === 9 && deviceProperties(0).minor === 0;
  it.skipIf(!sm90)('both kernel families (the kernel option: Hopper wgmma and mma.sync), causal lower-right', () => {
    for (const D of [64, 128, 256]) {
      const { q, k, v } = inputs([3, 2, 2, 200, 300, D]);
      const counts = [1, 299, 0];
      const opts: SdpaOptions = { isCausal: true, alignment: 'lowerRight' };
      const ref = sdpaForward(q.to('cpu'), k.to('cpu'), v.to('cpu'), onCpu(opts, counts));
      for (const kernel of ['sm90', 'sm80']) {
        const r = sdpaForward(q, k, v, { ...opts, sequsedK: used(counts, 'cuda'), kernel });
        expect(r.backend).toBe('flash-cuda');
        expect(relErr(r.out, ref.out), `${kernel} D${D}`).toBeLessThan(TOL);
        expect(relErr(r.logsumexp, ref.logsumexp), `${kernel} D${D}`).toBeLessThan(TOL);
      }
    }
  });

  it('split-KV with packed GQA (decode): every split count gives the cpu-math result', () => {
    const { q, k, v } = inputs([3, 8, 2, 1, 3000, 128]);
    const counts = [3000, 1111, 0];
    const p = normalizeParams(q, k, v, { enableGqa: true, sequsedK: used(counts, 'cuda') });
    const ref = sdpaForward(q.to('cpu'), k.to('cpu'), v.to('cpu'), onCpu({ enableGqa: true }, counts));
    expect(planFor(p).packGqa).toBe(true);
    for (const numSplits of [1, 5, 64]) {
      const r = flashForward(p, { numSplits });
      expect(relErr(r.out, ref.out), `${numSplits} splits`).toBeLessThan(TOL);
      expect(relErr(r.logsumexp, ref.logsumexp), `${numSplits} splits`).toBeLessThan(TOL);
    }
  });

  it('varlen: sequences using none, some and all of their keys, causal lower-right', () => {
    const lensQ = [5, 130, 1, 40];
    const lensK = [9, 120, 300, 60];
    const counts = [0, 100, 300, 7];
    const cum = (xs: number[]) => xs.reduce<number[]>((a, x) => [...a, a[a.length - 1]! + x], [0]);
    const [cq, ck] = [cum(lensQ), cum(lensK)];
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const q = randn([cq[4]!, 4, 128], { ...o, seed: 41 });
    const k = randn([ck[4]!, 2, 128], { ...o, seed: 42 });
    const v = randn([ck[4]!, 2, 128], { ...o, seed: 43 });
    const g = randn([cq[4]!, 4, 128], { ...o, seed: 44 });
    const opts = (device: 'cpu' | 'cuda') => ({
      cuSeqlensQ: tensor(cq, [5], { dtype: 'int32', device }),
      cuSeqlensK: tensor(ck, [5], { dtype: 'int32', device }),
      maxSeqlenQ: 130,
      maxSeqlenK: 300,
      sequsedK: used(counts, device),
      enableGqa: true,
      isCausal: true,
      alignment: 'lowerRight' as const,
      requiresGrad: true,
    });
    const fwd = sdpaVarlen(q, k, v, { ...opts('cuda'), backends: ['flash-cuda'] });
    const grads = sdpaBackward(g, fwd);
    const ref = sdpaVarlen(q.to('cpu'), k.to('cpu'), v.to('cpu'), { ...opts('cpu'), backends: ['cpu-math'] });
    const want = sdpaBackward(g.to('cpu'), ref);
    expect(relErr(fwd.out, ref.out)).toBeLessThan(TOL);
    expect(relErr(fwd.logsumexp, ref.logsumexp)).toBeLessThan(TOL);
    for (const key of ['dq', 'dk', 'dv'] as const) expect(relErr(grads[key], want[key]), key).toBeLessThan(TOL);
    lensK.forEach((n, b) => {
      for (const t of [grads.dk, grads.dv]) {
        const rest = [...t.narrow(0, ck[b]! + counts[b]!, n - counts[b]!).toFloat64Array()];
        expect(
          rest.every((x) => x === 0),
          `sequence ${b}`,
        ).toBe(true);
      }
    });
  });
});
