// GPU suite of 'flash-cuda' beyond the conformance cases: the features against cpu-math, split-KV
// against the unsplit kernel, fully masked rows, configuration choice, and the addon's own argument
// checks. Skipped with the reason printed where there is no usable CUDA device.
import '@attn/cpu';
import {
  AttnInputError,
  empty,
  normalizeParams,
  randn,
  sdpa,
  sdpaForward,
  sdpaVarlen,
  type SdpaOptions,
  type Tensor,
  tensor,
} from '@attn/core';
import { isCudaStorage, memoryStats } from '@attn/cuda';
import { expect, it } from 'vitest';
import { flashCudaBackend, flashForward, planFor } from './index.js';
import { describeWhereRunnable } from '@attn/conformance';

const av = flashCudaBackend.availability();

function maxDiff(a: Float64Array, b: Float64Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]!) !== Number.isNaN(b[i]!)) return Infinity;
    if (a[i] === b[i]) continue; // equal infinities
    m = Math.max(m, Math.abs(a[i]! - b[i]!));
  }
  return m;
}

function inputs(
  b: number,
  hq: number,
  hk: number,
  sq: number,
  sk: number,
  d: number,
  dtype: 'bfloat16' | 'float16' = 'bfloat16',
) {
  const o = { dtype, device: 'cuda' as const };
  return [
    randn([b, hq, sq, d], { ...o, seed: 11 }),
    randn([b, hk, sk, d], { ...o, seed: 12 }),
    randn([b, hk, sk, d], { ...o, seed: 13 }),
  ] as const;
}

/** flash-cuda vs cpu-math on the same (rounded) inputs: max |d out| and max |d lse|. */
function againstCpu(q: Tensor, k: Tensor, v: Tensor, opts: SdpaOptions) {
  const gpu = sdpaForward(q, k, v, { ...opts, backends: ['flash-cuda'] });
  // The reference gets every tensor option on the CPU too (the same values).
  const cpuOpts = { ...opts, alibiSlopes: opts.alibiSlopes?.to('cpu') ?? null, backends: ['cpu-math'] };
  const cpu = sdpaForward(q.to('cpu'), k.to('cpu'), v.to('cpu'), cpuOpts);
  return {
    out: maxDiff(gpu.out.toFloat64Array(), cpu.out.toFloat64Array()),
    lse: maxDiff(gpu.logsumexp.toFloat64Array(), cpu.logsumexp.toFloat64Array()),
  };
}

const TOL = { bfloat16: 2.5e-2, float16: 4e-3 };

describeWhereRunnable('flash-cuda on a GPU', av.ok ? null : av.reason, () => {
  const features: Array<[string, SdpaOptions, [number, number, number, number, number, number]]> = [
    ['plain', {}, [2, 3, 3, 129, 200, 64]],
    ['causal upper-left, Sq < Sk', { isCausal: true }, [2, 2, 2, 40, 300, 128]],
    ['causal lower-right, Sq < Sk', { isCausal: true, alignment: 'lowerRight' }, [2, 2, 2, 40, 300, 128]],
    ['window [24, 4]', { window: [24, 4] }, [1, 2, 2, 200, 230, 96]],
    ['softcap', { softcap: 8 }, [1, 2, 2, 100, 120, 64]],
    ['gqa', { enableGqa: true }, [2, 8, 2, 70, 90, 64]],
    ['dropout (same mask as cpu-math)', { dropoutP: 0.3, dropoutSeed: 99n, dropoutOffset: 2 }, [1, 2, 2, 64, 96, 64]],
    ['head dim 72 (padded)', {}, [1, 2, 2, 50, 60, 72]],
    ['head dim 256', { isCausal: true }, [1, 1, 1, 70, 70, 256]],
  ];
  for (const [name, opts, [b, hq, hk, sq, sk, d]] of features) {
    it(`matches cpu-math: ${name}`, () => {
      const [q, k, v] = inputs(b, hq, hk, sq, sk, d);
      const e = againstCpu(q, k, v, opts);
      expect(e.out).toBeLessThan(TOL.bfloat16);
      expect(e.lse).toBeLessThan(2e-3);
    });
  }

  it('matches cpu-math with ALiBi slopes', () => {
    const [q, k, v] = inputs(2, 4, 4, 60, 80, 64, 'float16');
    const slopes = tensor([0.5, 0.25, 0.125, 0.0625], [4], { dtype: 'float32', device: 'cuda' });
    const e = againstCpu(q, k, v, { alibiSlopes: slopes, isCausal: true, alignment: 'lowerRight' });
    expect(e.out).toBeLessThan(TOL.float16);
    expect(e.lse).toBeLessThan(2e-3);
  });

  it('matches cpu-math on packed varlen inputs', () => {
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const [q, k, v] = [
      randn([23, 4, 64], { ...o, seed: 1 }),
      randn([40, 2, 64], { ...o, seed: 2 }),
      randn([40, 2, 64], { ...o, seed: 3 }),
    ];
    const cu = (xs: number[], device: 'cuda' | 'cpu') => tensor(xs, [xs.length], { dtype: 'int32', device });
    const opts = { maxSeqlenQ: 17, maxSeqlenK: 30, enableGqa: true, isCausal: true, alignment: 'lowerRight' as const };
    const gpu = sdpaVarlen(q, k, v, {
      ...opts,
      cuSeqlensQ: cu([0, 5, 22, 23], 'cuda'),
      cuSeqlensK: cu([0, 9, 10, 40], 'cuda'),
      backends: ['flash-cuda'],
    });
    const cpu = sdpaVarlen(q.to('cpu'), k.to('cpu'), v.to('cpu'), {
      ...opts,
      cuSeqlensQ: cu([0, 5, 22, 23], 'cpu'),
      cuSeqlensK: cu([0, 9, 10, 40], 'cpu'),
      backends: ['cpu-math'],
    });
    expect(maxDiff(gpu.out.toFloat64Array(), cpu.out.toFloat64Array())).toBeLessThan(TOL.bfloat16);
    expect(maxDiff(gpu.logsumexp.toFloat64Array(), cpu.logsumexp.toFloat64Array())).toBeLessThan(2e-3);
  });

  it('gives out 0 and lse -inf for rows that see no key (lower-right, Sq > Sk)', () => {
    const [q, k, v] = inputs(1, 2, 2, 50, 20, 64);
    const r = sdpaForward(q, k, v, { isCausal: true, alignment: 'lowerRight', backends: ['flash-cuda'] });
    const out = r.out.toFloat64Array();
    const lse = r.logsumexp.toFloat64Array();
    for (let h = 0; h < 2; h++)
      for (let i = 0; i < 30; i++) {
        expect(lse[h * 50 + i]).toBe(-Infinity);
        for (let d = 0; d < 64; d++) expect(out[(h * 50 + i) * 64 + d]).toBe(0);
      }
    expect(Number.isFinite(lse[30])).toBe(true);
  });

  it('split-KV agrees with the unsplit kernel', () => {
    const [q, k, v] = inputs(2, 4, 4, 16, 1500, 128);
    const p = normalizeParams(q, k, v, { isCausal: true, alignment: 'lowerRight' });
    const one = flashForward(p, { numSplits: 1 });
    const many = flashForward(p, { numSplits: 7 });
    expect(maxDiff(one.out.toFloat64Array(), many.out.toFloat64Array())).toBeLessThan(1e-2);
    expect(maxDiff(one.logsumexp.toFloat64Array(), many.logsumexp.toFloat64Array())).toBeLessThan(1e-4);
  });

  it('plans split-KV with packed GQA for decode and the large tile for long prefill', () => {
    // Planning reads shapes only: unfilled tensors (filling 100M elements on the host took over a minute).
    const shaped = (b: number, hq: number, hk: number, sq: number, sk: number, d: number) => {
      const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
      return [empty([b, hq, sq, d], o), empty([b, hk, sk, d], o), empty([b, hk, sk, d], o)] as const;
    };
    const [q, k, v] = shaped(8, 32, 8, 1, 8192, 128);
    const decode = planFor(normalizeParams(q, k, v, { enableGqa: true }));
    expect(decode.packGqa).toBe(true);
    expect(decode.numSplits).toBeGreaterThan(1);
    expect(decode.kernel).toBe('bf16_d128_decode');
    const [q2, k2, v2] = shaped(4, 16, 16, 4096, 4096, 128);
    const prefill = planFor(normalizeParams(q2, k2, v2, { isCausal: true }));
    // lean / sm90ws (Hopper): no ALiBi, softcap, dropout or left window
    expect(prefill.kernel).toMatch(/_(large|lean|sm90ws)$/);
    expect(prefill.numSplits).toBe(1);
  });

  it('the lean kernel (on sm90: the Hopper kernel) agrees with the full one', () => {
    const [q, k, v] = inputs(2, 4, 4, 300, 700, 128);
    for (const opts of [{ isCausal: true, alignment: 'lowerRight' }, {}] as SdpaOptions[]) {
      const p = normalizeParams(q, k, v, opts);
      expect(planFor(p).kernel).toMatch(/^bf16_d128_(lean|lean_small|sm90ws)$/);
      const lean = flashForward(p);
      const full = flashForward(p, { kernel: 'bf16_d128_large' });
      expect(maxDiff(lean.out.toFloat64Array(), full.out.toFloat64Array())).toBeLessThan(1e-2);
      expect(maxDiff(lean.logsumexp.toFloat64Array(), full.logsumexp.toFloat64Array())).toBeLessThan(1e-4);
    }
  });

  it('allocates out, lse and the split partials from the caching allocator in the launching call', () => {
    const [q, k, v] = inputs(1, 2, 2, 16, 700, 64);
    const p = normalizeParams(q, k, v);
    const one = flashForward(p, { numSplits: 1 });
    for (let i = 0; i < 3; i++) {
      const warm = flashForward(p, { numSplits: 3 });
      warm.out.dispose();
      warm.logsumexp.dispose();
    }
    const before = memoryStats(0);
    const r = flashForward(p, { numSplits: 3 });
    // out and lse are live blocks of @attn/cuda's allocator; the partials went back once the kernels were queued.
    expect(memoryStats(0).activeBlocks).toBe(before.activeBlocks + 2);
    expect(isCudaStorage(r.out.storage) && isCudaStorage(r.logsumexp.storage)).toBe(true);
    expect(maxDiff(one.out.toFloat64Array(), r.out.toFloat64Array())).toBeLessThan(1e-2);
    expect(maxDiff(one.logsumexp.toFloat64Array(), r.logsumexp.toFloat64Array())).toBeLessThan(1e-4);
    r.out.dispose();
    r.logsumexp.dispose();
    expect(memoryStats(0).activeBlocks).toBe(before.activeBlocks);
    one.out.dispose();
    one.logsumexp.dispose();
  });

  it('sdpa() keeps only out: the logsumexp is scratch, freed once the kernels are queued', () => {
    const [q, k, v] = inputs(1, 2, 2, 16, 700, 64);
    const full = sdpaForward(q, k, v, { backends: ['flash-cuda'] });
    for (let i = 0; i < 3; i++) sdpa(q, k, v, { backends: ['flash-cuda'] }).dispose();
    const before = memoryStats(0);
    const out = sdpa(q, k, v, { backends: ['flash-cuda'] });
    expect(memoryStats(0).activeBlocks).toBe(before.activeBlocks + 1);
    expect(maxDiff(full.out.toFloat64Array(), out.toFloat64Array())).toBe(0);
    out.dispose();
    expect(memoryStats(0).activeBlocks).toBe(before.activeBlocks);
  });

  it('the addon re-checks its arguments and throws (never aborts)', () => {
    const [q, k, v] = inputs(1, 1, 1, 8, 8, 64);
    const p = normalizeParams(q, k, v);
    expect(() => flashForward({ ...p, headDim: 300 })).toThrow(AttnInputError);
    expect(() => flashForward({ ...p, headsKV: 3 })).toThrow(/multiple of key\/value heads/);
  });
});
