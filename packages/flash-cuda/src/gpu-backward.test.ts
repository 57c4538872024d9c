// GPU suite of the backward beyond the conformance cases: features against cpu-math's backward on the
// same rounded inputs, the deterministic mode's bit-for-bit reproducibility, zero gradients of rows that
// see no key, and the addon's re-checks. Skipped with the reason printed where there is no usable device.
import '@attn/cpu';
import { normalizeParams, randn, sdpaBackward, sdpaForward, type SdpaOptions, type Tensor, tensor } from '@attn/core';
import { deviceProperties, emptyCache } from '@attn/cuda';
import { expect, it } from 'vitest';
import { backwardPlanFor, flashBackward, flashCudaBackend } from './index.js';
import { describeWhereRunnable } from '@attn/conformance';

const av = flashCudaBackend.availability();

/** max |a - b| / max(1, max |b|); Infinity when the NaN patterns differ. */
function relErr(a: Float64Array, b: Float64Array): number {
  let m = 0;
  let scale = 1;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]!) !== Number.isNaN(b[i]!)) return Infinity;
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return m / scale;
}

type Shape = [number, number, number, number, number, number];

function inputs([b, hq, hk, sq, sk, d]: Shape) {
  const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
  return {
    q: randn([b, hq, sq, d], { ...o, seed: 21 }),
    k: randn([b, hk, sk, d], { ...o, seed: 22 }),
    v: randn([b, hk, sk, d], { ...o, seed: 23 }),
    g: randn([b, hq, sq, d], { ...o, seed: 24 }),
  };
}

/** Gradients of flash-cuda and of cpu-math (float64 inside, rounded to bf16) on the same inputs. */
function againstCpu(shape: Shape, opts: SdpaOptions) {
  const { q, k, v, g } = inputs(shape);
  const all = { ...opts, requiresGrad: true };
  const gpu = sdpaBackward(g, sdpaForward(q, k, v, { ...all, backends: ['flash-cuda'] }));
  // The reference gets every tensor option on the CPU too (the same values).
  const onCpu = { ...all, alibiSlopes: all.alibiSlopes?.to('cpu') ?? null, backends: ['cpu-math'] };
  const cpu = sdpaBackward(g.to('cpu'), sdpaForward(q.to('cpu'), k.to('cpu'), v.to('cpu'), onCpu));
  const err = (a: Tensor, b: Tensor) => relErr(a.toFloat64Array(), b.toFloat64Array());
  return { dq: err(gpu.dq, cpu.dq), dk: err(gpu.dk, cpu.dk), dv: err(gpu.dv, cpu.dv) };
}

const TOL = 3e-2; // bf16 gradients, relative to the largest reference element

describeWhereRunnable('flash-cuda backward on a GPU', av.ok ? null : av.reason, () => {
  const slopes = () => tensor([0.5, 0.25, 0.125, 0.0625], [4], { dtype: 'float32', device: 'cuda' });
  const cases: Array<[string, () => SdpaOptions, Shape]> = [
    ['plain', () => ({}), [2, 3, 3, 129, 200, 64]],
    ['causal lower-right, Sq < Sk', () => ({ isCausal: true, alignment: 'lowerRight' }), [2, 2, 2, 40, 300, 128]],
    ['causal upper-left, Sq > Sk', () => ({ isCausal: true }), [1, 2, 2, 150, 70, 128]],
    ['window [24, 4]', () => ({ window: [24, 4] }), [1, 2, 2, 200, 230, 96]],
    ['softcap', () => ({ softcap: 8 }), [1, 2, 2, 100, 120, 64]],
    ['alibi causal', () => ({ alibiSlopes: slopes(), isCausal: true }), [1, 4, 4, 90, 90, 64]],
    ['gqa 8/2', () => ({ enableGqa: true }), [2, 8, 2, 70, 90, 64]],
    ['mqa 4/1 causal', () => ({ enableGqa: true, isCausal: true }), [1, 4, 1, 80, 80, 128]],
    ['dropout', () => ({ dropoutP: 0.3, dropoutSeed: 99n, dropoutOffset: 2 }), [1, 2, 2, 64, 96, 64]],
    ['head dim 72 (padded)', () => ({}), [1, 2, 2, 50, 60, 72]],
    ['head dim 192', () => ({ isCausal: true }), [1, 1, 1, 70, 90, 192]],
    ['head dim 256', () => ({ isCausal: true }), [1, 1, 1, 70, 70, 256]],
    ['deterministic gqa', () => ({ deterministic: true, enableGqa: true }), [1, 4, 2, 100, 130, 128]],
  ];
  for (const [name, opts, shape] of cases) {
    it(`matches cpu-math: ${name}`, () => {
      const e = againstCpu(shape, opts());
      expect(e.dq).toBeLessThan(TOL);
      expect(e.dk).toBeLessThan(TOL);
      expect(e.dv).toBeLessThan(TOL);
    });
  }

  it('is bitwise reproducible in deterministic mode', () => {
    const { q, k, v, g } = inputs([2, 4, 4, 300, 300, 64]);
    const fwd = sdpaForward(q, k, v, {
      requiresGrad: true,
      deterministic: true,
      isCausal: true,
      backends: ['flash-cuda'],
    });
    const p = normalizeParams(q, k, v, { requiresGrad: true, deterministic: true, isCausal: true });
    const a = flashBackward(p, fwd, g);
    const b = flashBackward(p, fwd, g);
    for (const key of ['dq', 'dk', 'dv'] as const) expect(a[key].toFloat64Array()).toEqual(b[key].toFloat64Array());
  });

  it('gives zero gradients (not NaN) for rows that see no key', () => {
    const { q, k, v, g } = inputs([1, 2, 2, 50, 20, 64]);
    const r = sdpaBackward(
      g,
      sdpaForward(q, k, v, { requiresGrad: true, isCausal: true, alignment: 'lowerRight', backends: ['flash-cuda'] }),
    );
    const dq = r.dq.toFloat64Array();
    for (let h = 0; h < 2; h++) for (let i = 0; i < 30 * 64; i++) expect(dq[h * 50 * 64 + i]).toBe(0);
    for (const t of [r.dq, r.dk, r.dv]) expect(t.toFloat64Array().every(Number.isFinite)).toBe(true);
  });

  // 2^31 elements per tensor (B 1, H 16384, S 1024, D 128, as S 1M at H 16): the float32 dQ workspace
  // then has more elements than any one dim may hold; it is allocated in two dims. Inputs are 64 random
  // heads tiled 256 times on the device (randn fills on the host, far too slow for 2^31 values); heads
  // at the start, the middle and the end are checked against cpu-math on their base head.
  it('runs with tensors and a dQ workspace of 2^31 elements (H 16384, S 1024, D 128)', (ctx) => {
    const need = 48 * 2 ** 30;
    const have = deviceProperties(0).totalMemoryBytes;
    if (have < need) ctx.skip(`needs about 48 GiB of device memory; cuda:0 has ${(have / 2 ** 30).toFixed(0)} GiB`);
    const [H, S, D, BASE] = [16384, 1024, 128, 64];
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const bases = [41, 42, 43, 44].map((seed) => randn([1, BASE, S, D], { ...o, seed }));
    const tile = (t: Tensor) =>
      t
        .reshape([1, 1, BASE * S * D])
        .expand([1, H / BASE, BASE * S * D])
        .contiguous()
        .reshape([1, H, S, D]);
    const [q, k, v, g] = bases.map(tile) as [Tensor, Tensor, Tensor, Tensor];
    const fwd = sdpaForward(q, k, v, { isCausal: true, requiresGrad: true, backends: ['flash-cuda'] });
    const gpu = sdpaBackward(g, fwd);
    try {
      for (const h of [0, H / 2 - 1, H - 1]) {
        const head = (t: Tensor, i: number) => t.narrow(1, i, 1).to('cpu');
        const [hq, hk, hv, hg] = bases.map((t) => head(t, h % BASE)) as [Tensor, Tensor, Tensor, Tensor];
        const ref = sdpaBackward(
          hg,
          sdpaForward(hq, hk, hv, { isCausal: true, requiresGrad: true, backends: ['cpu-math'] }),
        );
        for (const key of ['dq', 'dk', 'dv'] as const) {
          const e = relErr(head(gpu[key], h).toFloat64Array(), ref[key].toFloat64Array());
          expect(e, `head ${h} ${key}`).toBeLessThan(TOL);
        }
      }
    } finally {
      for (const t of [...bases, q, k, v, g, fwd.out, fwd.logsumexp, gpu.dq, gpu.dk, gpu.dv]) t.dispose();
      emptyCache();
    }
  }, 120_000);

  it('plans the head-dim bucket', () => {
    const { q, k, v } = inputs([1, 2, 2, 64, 64, 72]);
    // bf16_d128_sm90_tma_ws (TMA warp-specialized wgmma) on sm90 for these dense tensors, bf16_d128_2d (2-D tiled
    // dK/dV) elsewhere where its 161 KB of shared memory fit, else row-tiled.
    expect(backwardPlanFor(normalizeParams(q, k, v, { requiresGrad: true })).kernel).toMatch(
      /^bf16_d128(_2d|_sm90_tma_ws)?$/,
    );
    // The kernel option 'sm80' keeps the backward on mma.sync.
    expect(backwardPlanFor(normalizeParams(q, k, v, { requiresGrad: true, kernel: 'sm80' })).kernel).toMatch(
      /^bf16_d128(_2d)?$/,
    );
  });
});
