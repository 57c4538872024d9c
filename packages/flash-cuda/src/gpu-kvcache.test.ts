// sdpaKvCache on the CUDA backends: the conformance kv-cache cases (append, rotary, paged and
// contiguous caches, cacheBatchIdx, leftpadK, GQA, causal, window, softcap, ALiBi) plus decode shapes
// with D == Dv on flash-cuda and cuda-math against cpu-math with the accuracy rule; flash-cuda must take
// every half-precision case with D == Dv. Then a decode step with append captured into a CUDA graph and
// replayed with new lengths written on the device, each replay against cpu-math on the same inputs.
// Skipped with the reason printed where there is no usable device.
import '@attn/cpu';
import { explainKvCache, type KvCacheOptions, randn, sdpaKvCache, type Tensor, tensor } from '@attn/core';
import { buildKvCacheCases, describeWhereRunnable, type KvCacheCaseSpec, runKvCacheCase } from '@attn/conformance';
import { captureGraph, copyDeviceToDevice, type CudaStorage, synchronize } from '@attn/cuda';
import { expect, it } from 'vitest';
import { scaledMaxError as relErr } from '@attn/core/testing';
import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();

const decode = {
  batch: 3,
  headsQ: 8,
  headsKV: 2,
  seqQ: 1,
  headDim: 64,
  headDimV: 64,
  newLen: 1,
  causal: true,
} as const;
const EXTRA: KvCacheCaseSpec[] = (['float16', 'bfloat16'] as const).flatMap((dtype) => [
  {
    ...decode,
    dtype,
    name: `paged-b16-append-rotary-softcap-d64/${dtype}`,
    seqQ: 3,
    newLen: 3,
    seqlens: [33, 15, 0],
    cache: { kind: 'paged', blockSize: 16 },
    rotary: { dim: 64, interleaved: false },
    softcap: 4,
  },
  {
    ...decode,
    dtype,
    name: `paged-b64-window-alibi-leftpad/${dtype}`,
    seqlens: [100, 3, 200],
    leftpadK: [10, 0, 64],
    cache: { kind: 'paged', blockSize: 64 },
    window: [50, 0],
    alibi: true,
    rotary: { dim: 32, interleaved: true },
  },
  {
    ...decode,
    dtype,
    name: `contiguous-cachebatchidx-leftpad-d128/${dtype}`,
    headDim: 128,
    headDimV: 128,
    seqlens: [700, 1, 1023],
    leftpadK: [5, 1, 0],
    cacheBatchIdx: [3, 0, 1],
    cache: { kind: 'contiguous', rows: 4, length: 1024 },
    rotary: { dim: 128, interleaved: false },
  },
  {
    ...decode,
    dtype,
    name: `paged-b256-prefill-chunk-noncausal-d72/${dtype}`,
    batch: 2,
    headDim: 72,
    headDimV: 72,
    seqQ: 20,
    newLen: 20,
    seqlens: [100, 300],
    cache: { kind: 'paged', blockSize: 256 },
    causal: false,
    rotary: { dim: 24, interleaved: false },
  },
  {
    ...decode,
    dtype,
    name: `decode-b8-hq32-hk8-d128-paged256/${dtype}`,
    batch: 8,
    headsQ: 32,
    headsKV: 8,
    headDim: 128,
    headDimV: 128,
    seqlens: [4000, 17, 1, 2500, 999, 0, 3000, 64],
    cache: { kind: 'paged', blockSize: 256 },
    rotary: { dim: 128, interleaved: false },
  },
]);
const CASES = [...buildKvCacheCases(), ...EXTRA];
const halfSameDims = (s: KvCacheCaseSpec) =>
  (s.dtype === 'float16' || s.dtype === 'bfloat16') && s.headDim === s.headDimV;

describeWhereRunnable('sdpaKvCache on CUDA against cpu-math', av.ok ? null : av.reason, () => {
  const seed = BigInt(Date.now() % 1_000_000);
  for (const backend of ['flash-cuda', 'cuda-math'] as const) {
    CASES.forEach((spec, i) => {
      it(`${backend}: ${spec.name}`, () => {
        const outcome = runKvCacheCase(backend, spec, seed + BigInt(i), { type: 'cuda', index: 0 });
        if (!outcome.ran) {
          // cuda-math takes every call; flash-cuda declines only float32/float64 and Dv != D.
          expect(
            backend === 'flash-cuda' && !halfSameDims(spec),
            `${backend} declined ${spec.name}: ${outcome.reasons.join('; ')}`,
          ).toBe(true);
          return;
        }
        const failed = outcome.verdicts.filter((v) => !v.ok).map((v) => v.message);
        expect(failed, `${spec.name} (seed ${seed + BigInt(i)})`).toEqual([]);
      });
    });
  }

  it('explain says why flash-cuda declines a kv-cache call (Dv != D) and cuda-math runs it', () => {
    const o = { dtype: 'float16' as const, device: 'cuda' as const };
    const report = explainKvCache(randn([1, 1, 2, 16], o), randn([1, 8, 2, 16], o), randn([1, 8, 2, 8], o), {});
    expect(report.selected).toBe('cuda-math');
    const flash = report.candidates.find((c) => c.backend === 'flash-cuda')!;
    expect(flash.reasons.map((r) => r.rule)).toContain('headDimsEqual');
  });
});

const storage = (t: Tensor): CudaStorage => t.storage as CudaStorage;
const copyInto = (dst: Tensor, src: Tensor): void =>
  copyDeviceToDevice(storage(dst), 0, storage(src), 0, storage(src).bytes);

describeWhereRunnable('flash-cuda kv-cache decode step in a CUDA graph', av.ok ? null : av.reason, () => {
  it('replays append + rotary + attention for new lengths written on the device, matching cpu-math', () => {
    const B = 4,
      HQ = 8,
      HK = 2,
      D = 128,
      BS = 16,
      PAGES = 8; // 128 positions per row
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const i32 = (xs: number[], shape: number[], device: 'cpu' | 'cuda') =>
      tensor(xs, shape, { dtype: 'int32', device });
    const q = randn([B, 1, HQ, D], { ...o, seed: 1 });
    const kNew = randn([B, 1, HK, D], { ...o, seed: 2 });
    const vNew = randn([B, 1, HK, D], { ...o, seed: 3 });
    const kCache = randn([B * PAGES, BS, HK, D], { ...o, seed: 4 });
    const vCache = randn([B * PAGES, BS, HK, D], { ...o, seed: 5 });
    // Row b's pages, shuffled through the pool.
    const table = Array.from({ length: B * PAGES }, (_, n) => (n * 7) % (B * PAGES));
    const blockTable = i32(table, [B, PAGES], 'cuda');
    const half = D / 2;
    const angles = Array.from(
      { length: (B * PAGES * BS + 1) * half },
      (_, n) => Math.floor(n / half) * 10000 ** (-(n % half) / half),
    );
    const cos = tensor(angles.map(Math.cos), [B * PAGES * BS + 1, half], o);
    const sin = tensor(angles.map(Math.sin), [B * PAGES * BS + 1, half], o);
    const lens0 = [10, 0, 100, 127];
    const cacheSeqlens = i32(lens0, [B], 'cuda');
    const opts = (where: 'cpu' | 'cuda', seqlens: Tensor, table: Tensor, backend: string): KvCacheOptions => ({
      cacheSeqlens: seqlens,
      kNew: where === 'cuda' ? kNew : kNew.to('cpu'),
      vNew: where === 'cuda' ? vNew : vNew.to('cpu'),
      rotaryCos: where === 'cuda' ? cos : cos.to('cpu'),
      rotarySin: where === 'cuda' ? sin : sin.to('cpu'),
      blockTable: table,
      isCausal: true,
      enableGqa: true,
      backends: [backend],
    });
    synchronize();
    const graph = captureGraph(() =>
      sdpaKvCache(q, kCache, vCache, opts('cuda', cacheSeqlens, blockTable, 'flash-cuda')),
    );
    expect(graph.result.backend).toBe('flash-cuda');

    const steps: Array<[number[], number]> = [
      [lens0, 0],
      [[11, 1, 101, 0], 11],
      [[63, 64, 65, 126], 21],
    ];
    for (const [lens, seed] of steps) {
      if (seed > 0) {
        const fresh = [
          randn([B, 1, HQ, D], { ...o, seed }),
          randn([B, 1, HK, D], { ...o, seed: seed + 1 }),
          randn([B, 1, HK, D], { ...o, seed: seed + 2 }),
        ];
        [q, kNew, vNew].forEach((t, i) => copyInto(t, fresh[i]!));
        const newLens = i32(lens, [B], 'cuda');
        copyInto(cacheSeqlens, newLens);
        for (const t of [...fresh, newLens]) t.dispose();
      }
      // cpu-math on copies of the caches as they are before this replay.
      const kRef = kCache.to('cpu');
      const vRef = vCache.to('cpu');
      const want = sdpaKvCache(
        q.to('cpu'),
        kRef,
        vRef,
        opts('cpu', i32(lens, [B], 'cpu'), i32(table, [B, PAGES], 'cpu'), 'cpu-math'),
      );
      graph.replay();
      expect(relErr(graph.result.out, want.out)).toBeLessThan(3e-2);
      expect(relErr(kCache, kRef)).toBeLessThan(1e-2); // the appended keys, rotated (bf16 rounding of the rotation)
      expect(relErr(vCache, vRef)).toBe(0);
    }
    expect(graph.replayCount).toBe(3);
    graph.dispose();
    graph.result.out.dispose();
    graph.result.logsumexp.dispose();
    for (const t of [q, kNew, vNew, kCache, vCache, blockTable, cos, sin, cacheSeqlens]) t.dispose();
  });
});
