// cpu-flash backward (dq, dk, dv, dbias) against cpu-math's on every SIMD level this CPU runs.
import { elementEncoder, randn, tensor } from '@attn/core';
import type { FloatDType, SdpaOptions, SdpaParams } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import type { CpuFlashIsa } from './backend.js';
import { backwardBuffers, backwardDesc } from './marshal.js';
import { addon } from './native.js';
import { f32, maxAbsDiff, params, varlenParams } from './testing.js';
import type { Shape } from './testing.js';

const load = addon();
const isas = (load.ok ? load.addon.buildInfo().runnableIsas : []).filter((i) => i !== 'avx512bf16') as CpuFlashIsa[];

// The levels whose bf16 backward multiplies bf16 pairs (backward_bf16_pairs.h); each skips, saying why, where
// this CPU does not run it.
const runnable = load.ok ? load.addon.buildInfo().runnableIsas : [];
const BF16_LEVELS = (['avx512bf16', 'amx'] as const).map((isa) => ({
  isa,
  skip: runnable.includes(isa)
    ? null
    : load.ok
      ? `this CPU does not run ${isa} (runnable: ${runnable.join(', ')})`
      : load.reason,
}));

const odd: Shape = { B: 2, Hq: 3, Hk: 3, Sq: 37, Sk: 75, D: 13, Dv: 7 };
const gqa: Shape = { B: 1, Hq: 4, Hk: 2, Sq: 70, Sk: 130, D: 32, Dv: 24 };

const additive = (shape: number[], dtype: FloatDType = 'float32') => {
  const n = shape.reduce((a, b) => a * b, 1);
  return tensor(
    Array.from({ length: n }, (_, i) => (i % 17 === 3 ? -Infinity : Math.cos(i) * 1.5)),
    shape,
    { dtype },
  );
};

const CASES: Array<[string, Shape, SdpaOptions]> = [
  ['plain odd shape', odd, {}],
  ['one key', { ...odd, Sk: 1 }, {}],
  ['gqa causal lower-right', gqa, { isCausal: true, alignment: 'lowerRight' }],
  ['window', { ...odd, Sq: 75 }, { window: [6, 3] }],
  ['alibi + softcap', gqa, { alibiSlopes: f32([0.5, 0.25, 0.125, 0.0625]), softcap: 4 }],
  ['dropout', gqa, { dropoutP: 0.25, dropoutSeed: 0xdeadbeefcafef00dn, dropoutOffset: 3 }],
  [
    'bool mask',
    odd,
    {
      attnMask: tensor(
        Array.from({ length: 37 * 75 }, (_, i) => (i % 7 === 0 ? 0 : 1)),
        [37, 75],
        { dtype: 'bool' },
      ),
    },
  ],
  ['additive mask, full shape (dbias in place)', odd, { attnMask: additive([2, 3, 37, 75]) }],
  ['additive mask [Sq, Sk] (dbias summed over B, H)', odd, { attnMask: additive([37, 75]) }],
  ['additive mask [B, 1, Sq, 1] (dbias summed over H and keys)', odd, { attnMask: additive([2, 1, 37, 1]) }],
  ['additive mask [1, Hq, 1, Sk] + causal', gqa, { attnMask: additive([1, 4, 1, 130]), isCausal: true }],
];

function grads(p: SdpaParams, isa: CpuFlashIsa) {
  const flash = createCpuFlashBackend({ isa, threads: 2 });
  const gradOut = randn(flash.forward(p).out.shape, { dtype: p.dtype, seed: 5 });
  const got = flash.backward!(p, flash.forward(p), gradOut);
  const ref = cpuMathBackend.backward!(p, cpuMathBackend.forward(p), gradOut);
  return { got, ref };
}

describe.skipIf(!load.ok)('cpu-flash backward', () => {
  for (const isa of isas) {
    for (const [name, shape, opts] of CASES) {
      it(`${isa} float32: ${name}`, () => {
        const { got, ref } = grads(params(shape, 'float32', { ...opts, requiresGrad: true }, 3), isa);
        expect(maxAbsDiff(got.dq, ref.dq)).toBeLessThan(1e-4);
        expect(maxAbsDiff(got.dk, ref.dk)).toBeLessThan(1e-4);
        expect(maxAbsDiff(got.dv, ref.dv)).toBeLessThan(1e-4);
        expect(got.dbias === undefined).toBe(ref.dbias === undefined);
        if (got.dbias && ref.dbias) {
          expect(got.dbias.shape).toEqual(ref.dbias.shape);
          expect(maxAbsDiff(got.dbias, ref.dbias)).toBeLessThan(1e-4);
        }
      });
    }
  }

  for (const dtype of ['float16', 'bfloat16'] as const) {
    it(`${dtype}: gqa causal with additive mask`, () => {
      const p = params(
        gqa,
        dtype,
        { isCausal: true, attnMask: additive([1, 4, 1, 130], dtype), requiresGrad: true },
        4,
      );
      const { got, ref } = grads(p, 'auto');
      const tol = dtype === 'float16' ? 1e-2 : 8e-2;
      for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(got[k], ref[k])).toBeLessThan(tol);
      expect(got.dbias!.dtype).toBe(dtype);
      expect(maxAbsDiff(got.dbias!, ref.dbias!)).toBeLessThan(tol);
    });
  }

  // 16-bit outputs take Delta = rowsum(P * dP~) inside the dQ pass while a query block's kept tiles fit
  // (backward.h: Sk <= 8192, <= 5440 under softcap), else in a pass of its own: both, on each side of
  // the bound, against the reference.
  const longKeys: Array<[string, Shape, SdpaOptions]> = [
    ['kept tiles', { B: 1, Hq: 2, Hk: 1, Sq: 70, Sk: 8190, D: 16, Dv: 8 }, { isCausal: true, alignment: 'lowerRight' }],
    ['own pass', { B: 1, Hq: 2, Hk: 1, Sq: 70, Sk: 8250, D: 16, Dv: 8 }, { isCausal: true, alignment: 'lowerRight' }],
    ['softcap, kept tiles', { B: 1, Hq: 2, Hk: 1, Sq: 9, Sk: 5400, D: 16, Dv: 8 }, { softcap: 3 }],
    ['softcap, own pass', { B: 1, Hq: 2, Hk: 1, Sq: 9, Sk: 5500, D: 16, Dv: 8 }, { softcap: 3 }],
  ];
  for (const dtype of ['float16', 'bfloat16'] as const) {
    for (const [name, shape, opts] of longKeys) {
      it(`${dtype}: Delta ${name} (Sk ${shape.Sk})`, () => {
        const { got, ref } = grads(params(shape, dtype, { ...opts, requiresGrad: true }, 6), 'auto');
        const tol = dtype === 'float16' ? 1e-2 : 8e-2;
        for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(got[k], ref[k])).toBeLessThan(tol);
      });
    }
  }

  for (const isa of isas) {
    it(`${isa} float32: varlen with an empty query side, an empty key side, causal lower-right, dropout`, () => {
      const p = varlenParams([37, 0, 130, 5], [70, 9, 140, 0], { Hq: 4, Hk: 2, D: 24, Dv: 16 }, 'float32', {
        isCausal: true,
        alignment: 'lowerRight',
        dropoutP: 0.2,
        dropoutSeed: 5n,
        requiresGrad: true,
      });
      const { got, ref } = grads(p, isa);
      expect(got.dq.shape).toEqual(ref.dq.shape);
      expect(got.dk.shape).toEqual(ref.dk.shape);
      for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(got[k], ref[k])).toBeLessThan(1e-4);
    });
  }

  // backward.h runs one task per (batch, kv head) (fused: 5 products per block pair) when those tasks keep the
  // threads busy, else two passes (7 products): 1 thread takes the fused schedule on every shape here; 16
  // threads (which the backend lowers to what a call's size pays for: threads.ts) the two passes where that
  // leaves more than one thread per two kv heads (Delta in its own pass, S 320; the smaller shapes may stay
  // fused). Both must give the same bits, 16-bit Delta (kept tiles or its own pass), dropout's kept P~, softcap
  // and dbias included.
  const schedules: Array<[string, Shape, SdpaOptions]> = [
    ['plain odd shape', odd, {}],
    ['gqa causal, dropout', gqa, { isCausal: true, dropoutP: 0.25, dropoutSeed: 7n }],
    // 4 threads at "16": two passes, Delta from the kept tiles with dropout (pass 1 once wrote P~ over the kept P).
    [
      'gqa causal, dropout, S 320',
      { B: 1, Hq: 4, Hk: 2, Sq: 320, Sk: 320, D: 64, Dv: 64 },
      { isCausal: true, dropoutP: 0.25, dropoutSeed: 7n },
    ],
    ['alibi + softcap', gqa, { alibiSlopes: f32([0.5, 0.25, 0.125, 0.0625]), softcap: 4 }],
    ['additive mask [B, 1, Sq, 1]', odd, { attnMask: additive([2, 1, 37, 1]) }],
    ['Delta in its own pass', { B: 1, Hq: 2, Hk: 1, Sq: 70, Sk: 8250, D: 16, Dv: 8 }, { isCausal: true }],
    // fp32 at D 128: the fused task walks its 10 key blocks in ranges (backward.h key_chunk_blocks: 4 a range on a
    // 2 MB L2, 2 where the OS reports no L2 size), the last one cut by Sk; the two passes walk them whole.
    ['key blocks in ranges, D 128', { B: 1, Hq: 2, Hk: 1, Sq: 130, Sk: 620, D: 128, Dv: 128 }, {}],
  ];
  for (const dtype of ['float32', 'bfloat16', 'float16'] as const) {
    for (const [name, shape, opts] of schedules) {
      it(`${dtype}: the fused and two-pass schedules give the same bits (${name})`, () => {
        const mask = opts.attnMask && dtype !== 'float32' ? { attnMask: additive([2, 1, 37, 1], dtype) } : {};
        const p = params(shape, dtype, { ...opts, ...mask, requiresGrad: true }, 9);
        const gradOut = randn(cpuMathBackend.forward(p).out.shape, { dtype, seed: 10 });
        const run = (threads: number) => {
          const b = createCpuFlashBackend({ threads });
          const g = b.backward!(p, b.forward(p), gradOut);
          return [g.dq, g.dk, g.dv, ...(g.dbias ? [g.dbias] : [])].map((t) => Buffer.from(t.toFloat32Array().buffer));
        };
        const fused = run(1);
        const twoPass = run(16);
        expect(fused.length).toBe(twoPass.length);
        fused.forEach((x, i) => expect(x.equals(twoPass[i]!)).toBe(true));
      });
    }
  }

  // The bf16 backward on bf16 pairs: its schedules and thread counts give the same bits (each level its own),
  // and it is that path that runs (buildInfo names it, and its bits differ from the fp32-converting ones).
  for (const { isa, skip } of BF16_LEVELS) {
    const why = skip ? ` (skipped: ${skip})` : '';
    if (skip) console.log(`cpu-flash bf16 backward on ${isa} skipped: ${skip}`);
    for (const [name, shape, opts] of [
      ...schedules,
      ['D128 gqa causal', { B: 1, Hq: 4, Hk: 2, Sq: 150, Sk: 200, D: 128, Dv: 128 }, { isCausal: true }],
    ] as Array<[string, Shape, SdpaOptions]>) {
      it.skipIf(skip !== null)(
        `${isa} bfloat16: the fused and two-pass schedules give the same bits (${name})${why}`,
        () => {
          const mask = opts.attnMask ? { attnMask: additive([2, 1, 37, 1], 'bfloat16') } : {};
          const p = params(shape, 'bfloat16', { ...opts, ...mask, requiresGrad: true }, 9);
          const gradOut = randn(cpuMathBackend.forward(p).out.shape, { dtype: 'bfloat16', seed: 10 });
          const run = (threads: number) => {
            const b = createCpuFlashBackend({ threads, isa });
            const g = b.backward!(p, b.forward(p), gradOut);
            return [g.dq, g.dk, g.dv, ...(g.dbias ? [g.dbias] : [])].map((t) => Buffer.from(t.toFloat32Array().buffer));
          };
          const fused = run(1);
          const twoPass = run(16);
          const again = run(3);
          expect(fused.length).toBe(twoPass.length);
          fused.forEach((x, i) => expect(x.equals(twoPass[i]!)).toBe(true));
          fused.forEach((x, i) => expect(x.equals(again[i]!)).toBe(true));
        },
      );
    }

    it.skipIf(skip !== null)(`${isa} bfloat16: the backward multiplies bf16 pairs${why}`, () => {
      const info = createCpuFlashBackend().buildInfo!(isa);
      expect(info['backward.bfloat16']).toBe(isa === 'amx' ? 'amx/bf16-amx' : 'avx512bf16/bf16-dpbf16');
      expect(info['backward.float32']).toBe('avx512/fp32');
      const p = params(gqa, 'bfloat16', { isCausal: true, requiresGrad: true }, 11);
      const gradOut = randn([1, 4, 70, 24], { dtype: 'bfloat16', seed: 12 });
      const grads = (level: CpuFlashIsa) => {
        const b = createCpuFlashBackend({ threads: 2, isa: level });
        const g = b.backward!(p, createCpuFlashBackend({ isa: 'avx512' }).forward(p), gradOut);
        return { g, bits: [g.dq, g.dk, g.dv].map((t) => Buffer.from(t.toFloat32Array().buffer)) };
      };
      const pairs = grads(isa);
      const fp32 = grads('avx512');
      expect(pairs.bits.some((x, i) => !x.equals(fp32.bits[i]!))).toBe(true);
      for (const k of ['dq', 'dk', 'dv'] as const) expect(maxAbsDiff(pairs.g[k], fp32.g[k])).toBeLessThan(8e-2);
    });
  }

  it('is bitwise reproducible across runs and thread counts', () => {
    const p = params(gqa, 'float32', { isCausal: true, dropoutP: 0.1, dropoutSeed: 1n, requiresGrad: true }, 2);
    const gradOut = randn([1, 4, 70, 24], { seed: 8 });
    const run = (threads: number) => {
      const b = createCpuFlashBackend({ threads });
      const g = b.backward!(p, b.forward(p), gradOut);
      return [g.dq, g.dk, g.dv].map((t) => Buffer.from(t.toFloat32Array().buffer));
    };
    const a = run(1);
    const b = run(2);
    a.forEach((x, i) => expect(x.equals(b[i]!)).toBe(true));
  });

  it('is bitwise reproducible across thread counts in bfloat16 (Delta from the kept tiles)', () => {
    const p = params(gqa, 'bfloat16', { isCausal: true, requiresGrad: true }, 2);
    const gradOut = randn([1, 4, 70, 24], { dtype: 'bfloat16', seed: 8 });
    const run = (threads: number) => {
      const b = createCpuFlashBackend({ threads });
      const g = b.backward!(p, b.forward(p), gradOut);
      return [g.dq, g.dk, g.dv].map((t) => Buffer.from(t.toFloat32Array().buffer));
    };
    const a = run(1);
    const b = run(3);
    a.forEach((x, i) => expect(x.equals(b[i]!)).toBe(true));
  });

  // Its gradients' host storage is not zero-filled (core's emptyOutput 'whole'), so the kernel must write every
  // element itself: keys no query sees, unused keys and empty sequences included. Here dq, dk and dv start as
  // NaN (finite inputs), under both schedules (1 thread: fused; 16: two passes on these shapes).
  it('writes every element of dq, dk and dv', () => {
    const native = load.ok ? load.addon : null;
    const calls: Array<[string, SdpaParams]> = [
      ...CASES.map(([name, shape, opts]): [string, SdpaParams] => [
        name,
        params(shape, 'float32', { ...opts, requiresGrad: true }, 3),
      ]),
      [
        'varlen, empty sequences, causal lower-right',
        varlenParams([37, 0, 130, 5], [70, 9, 140, 0], { Hq: 4, Hk: 2, D: 24, Dv: 16 }, 'float32', {
          isCausal: true,
          alignment: 'lowerRight',
          requiresGrad: true,
        }),
      ],
      [
        'sequsedK with a row that uses no key',
        params(
          { ...gqa, B: 2 },
          'float32',
          { sequsedK: tensor([0, 77], [2], { dtype: 'int32' }), requiresGrad: true },
          4,
        ),
      ],
      ['bfloat16, gqa causal', params(gqa, 'bfloat16', { isCausal: true, requiresGrad: true }, 5)],
    ];
    // Every level this CPU runs: the bf16 case also on the bf16 pairs backward (avx512bf16, amx).
    const levels = [...isas, ...(runnable.includes('avx512bf16') ? (['avx512bf16'] as const) : [])];
    for (const isa of levels) {
      for (const [name, p] of calls) {
        const saved = createCpuFlashBackend({ isa, threads: 2 }).forward(p);
        const gradOut = randn(saved.out.shape, { dtype: p.dtype, seed: 5 });
        for (const threads of [1, 16]) {
          const bufs = backwardBuffers(p);
          const nan = elementEncoder(p.dtype)(Number.NaN);
          for (const t of [bufs.dq, bufs.dk, bufs.dv]) (t.storage as Float32Array | Uint16Array).fill(nan);
          native!.backward(backwardDesc(p, saved, gradOut, bufs, isa, threads));
          for (const [k, t] of Object.entries({ dq: bufs.dq, dk: bufs.dk, dv: bufs.dv })) {
            expect([...t.toFloat32Array()].some(Number.isNaN), `${isa} ${threads} threads ${name}: ${k}`).toBe(false);
          }
        }
      }
    }
  });
});
