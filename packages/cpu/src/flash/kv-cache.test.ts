// cpu-flash on sdpaKvCache calls, on every SIMD level this CPU runs: the same cache as cpu-math after
// the append (shared host code, bit for bit), the attention within the dtype's tolerance of cpu-math,
// contiguous caches (cacheBatchIdx, leftpadK) and paged ones, decode and prefill chunks, sync and async.
import { randn, sdpaKvCache, sdpaKvCacheAsync, tensor } from '@attn/core';
import type { FloatDType, KvCacheOptions, Tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import '../index.js';
import { createCpuFlashBackend } from './backend.js';
import type { CpuFlashIsa } from './backend.js';
import { addon } from './native.js';
import { maxAbsDiff, TOL } from './testing.js';
import { registerBackend, unregisterBackend } from '@attn/core';

const load = addon();
const isas = (load.ok ? load.addon.buildInfo().runnableIsas : []) as CpuFlashIsa[];
const int32 = (xs: number[], shape = [xs.length]) => tensor(xs, shape, { dtype: 'int32' });

interface Setup {
  readonly name: string;
  readonly q: [number, number, number, number];
  readonly cache: [number, number, number, number];
  readonly dv: number;
  readonly newLen: number;
  readonly opts: () => KvCacheOptions;
}

const SETUPS: Setup[] = [
  {
    name: 'decode, contiguous, cacheBatchIdx, rotary, GQA',
    q: [3, 1, 8, 64],
    cache: [4, 96, 2, 64],
    dv: 64,
    newLen: 1,
    opts: () => ({
      cacheSeqlens: int32([40, 0, 95]),
      cacheBatchIdx: int32([3, 1, 0]),
      isCausal: true,
      rotaryCos: randn([97, 16], { seed: 5 }),
      rotarySin: randn([97, 16], { seed: 6 }),
    }),
  },
  {
    name: 'prefill chunk, contiguous, leftpadK, window, softcap',
    q: [2, 70, 4, 32],
    cache: [2, 200, 2, 32],
    dv: 24,
    newLen: 70,
    opts: () => ({
      cacheSeqlens: int32([100, 13]),
      leftpadK: int32([9, 13]),
      isCausal: true,
      window: [50, 0],
      softcap: 5,
      rotaryCos: randn([200, 8], { seed: 7 }),
      rotarySin: randn([200, 8], { seed: 8 }),
      rotaryInterleaved: true,
    }),
  },
  {
    name: 'decode, paged blocks of 16, ALiBi',
    q: [3, 1, 4, 40],
    cache: [20, 16, 2, 40],
    dv: 40,
    newLen: 1,
    opts: () => ({
      cacheSeqlens: int32([33, 0, 70]),
      blockTable: int32([7, 2, 11, -1, -1, 19, -1, -1, -1, -1, 0, 3, 5, 9, 13], [3, 5]),
      isCausal: true,
      alibiSlopes: tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2], [3, 4], { dtype: 'float32' }),
    }),
  },
];

/** One call on `backend` with fresh copies of the cache (the call mutates it). */
function runOn(backend: string, s: Setup, dtype: FloatDType, async = false) {
  const k = randn(s.cache, { dtype, seed: 1 });
  const v = randn([...s.cache.slice(0, 3), s.dv], { dtype, seed: 2 });
  const q = randn(s.q, { dtype, seed: 3 });
  const extra = s.opts();
  const cast = (t: Tensor | null | undefined) => t?.toDType(dtype);
  const opts: KvCacheOptions = {
    ...extra,
    rotaryCos: cast(extra.rotaryCos),
    rotarySin: cast(extra.rotarySin),
    kNew: randn([s.q[0], s.newLen, s.cache[2], s.cache[3]], { dtype, seed: 4 }),
    vNew: randn([s.q[0], s.newLen, s.cache[2], s.dv], { dtype, seed: 9 }),
    enableGqa: true,
    backends: [backend],
  };
  const result = async ? sdpaKvCacheAsync(q, k, v, opts) : Promise.resolve(sdpaKvCache(q, k, v, opts));
  return result.then((r) => ({ r, k, v }));
}

describe.skipIf(!load.ok)('cpu-flash sdpaKvCache', () => {
  for (const isa of isas) {
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      for (const s of SETUPS) {
        it(`${isa} ${dtype}: ${s.name}`, async () => {
          registerBackend(createCpuFlashBackend({ isa, threads: 2, name: `cpu-flash-${isa}`, priority: -1 }));
          try {
            const got = await runOn(`cpu-flash-${isa}`, s, dtype, isa === isas[0]);
            const want = await runOn('cpu-math', s, dtype);
            expect(got.r.backend).toBe(`cpu-flash-${isa}`);
            expect([...got.k.toFloat64Array()], 'kCache after the append').toEqual([...want.k.toFloat64Array()]);
            expect([...got.v.toFloat64Array()], 'vCache after the append').toEqual([...want.v.toFloat64Array()]);
            expect(got.r.out.toFloat64Array().every((x) => Number.isFinite(x))).toBe(true);
            expect(maxAbsDiff(got.r.out, want.r.out)).toBeLessThanOrEqual(TOL[dtype]);
            expect(maxAbsDiff(got.r.logsumexp, want.r.logsumexp)).toBeLessThanOrEqual(TOL[dtype] * 4);
          } finally {
            unregisterBackend(`cpu-flash-${isa}`);
          }
        });
      }
    }
  }
});
