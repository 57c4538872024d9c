// cpu-flash forward against cpu-math (float64) on odd shapes and every feature, on every SIMD level
// this CPU runs, in float32, float16 and bfloat16.
import { normalizeParams, tensor } from '@attn/core';
import type { FloatDType, SdpaOptions, SdpaParams } from '@attn/core';
import { nanOutputs } from '@attn/core/testing';
import { describe, expect, it } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import type { CpuFlashIsa } from './backend.js';
import { forwardDesc } from './marshal.js';
import { addon } from './native.js';
import { f32, maxAbsDiff, params, TOL, varlenParams } from './testing.js';
import type { Shape } from './testing.js';

const load = addon();
const isas: CpuFlashIsa[] = load.ok ? (load.addon.buildInfo().runnableIsas as CpuFlashIsa[]) : [];
const DTYPES: FloatDType[] = ['float32', 'float16', 'bfloat16'];

const odd: Shape = { B: 2, Hq: 3, Hk: 3, Sq: 37, Sk: 75, D: 13, Dv: 7 };
const gqa: Shape = { B: 1, Hq: 4, Hk: 2, Sq: 70, Sk: 130, D: 64, Dv: 48 };
const square: Shape = { B: 1, Hq: 2, Hk: 2, Sq: 67, Sk: 67, D: 16, Dv: 16 };

// Masks broadcast to [B, Hq, Sq, Sk] from smaller shapes; a few rows fully masked.
function boolMask(s: Shape) {
  const v: number[] = [];
  for (let i = 0; i < s.Sq; i++)
    for (let j = 0; j < s.Sk; j++) v.push(i % 11 === 3 ? 0 : (i * 7 + j * 3) % 5 !== 0 ? 1 : 0);
  return tensor(v, [s.Sq, s.Sk], { dtype: 'bool' });
}
function additiveMask(s: Shape, dtype: FloatDType) {
  const v: number[] = [];
  for (let h = 0; h < s.Hq; h++)
    for (let j = 0; j < s.Sk; j++) v.push(j % 13 === 5 ? -Infinity : Math.sin(h * 3 + j) * 2);
  return tensor(v, [1, s.Hq, 1, s.Sk], { dtype });
}

const FEATURES: Array<[string, Shape, (dtype: FloatDType) => SdpaOptions, ('bhsd' | 'bshd')?]> = [
  ['plain odd shape', odd, () => ({})],
  ['one query, one key', { ...odd, Sq: 1, Sk: 1 }, () => ({})],
  ['strided bshd views', odd, () => ({}), 'bshd'],
  ['gqa', gqa, () => ({})],
  ['causal upper-left, Sq < Sk', gqa, () => ({ isCausal: true })],
  ['causal lower-right, Sq < Sk', gqa, () => ({ isCausal: true, alignment: 'lowerRight' })],
  ['causal upper-left, Sq > Sk (rows past the end see all)', { ...odd, Sq: 75, Sk: 37 }, () => ({ isCausal: true })],
  [
    'causal lower-right, Sq > Sk (first rows see nothing)',
    { ...odd, Sq: 75, Sk: 37 },
    () => ({ isCausal: true, alignment: 'lowerRight' }),
  ],
  ['sliding window', square, () => ({ window: [9, 4] as const })],
  ['window left only, causal', square, () => ({ window: [5, -1] as const, isCausal: true })],
  ['alibi per head', gqa, () => ({ alibiSlopes: f32([0.5, 0.25, 0.125, 0.0625]) })],
  [
    'alibi per batch and head, lower-right',
    odd,
    () => ({ alibiSlopes: f32([0.3, 0.2, 0.1, 0.05, 0.4, 0.6], [2, 3]), alignment: 'lowerRight' }),
  ],
  ['softcap', gqa, () => ({ softcap: 3, scale: 0.5 })],
  ['bool mask [Sq, Sk] with fully masked rows', odd, () => ({ attnMask: boolMask(odd) })],
  ['additive mask [1, Hq, 1, Sk] with -inf', odd, (dt) => ({ attnMask: additiveMask(odd, dt) })],
  [
    'mask + causal + softcap + alibi + gqa',
    gqa,
    (dt) => ({ attnMask: additiveMask(gqa, dt), isCausal: true, softcap: 5, alibiSlopes: f32([0.1, 0.2, 0.3, 0.4]) }),
  ],
  ['dropout', gqa, () => ({ dropoutP: 0.3, dropoutSeed: 1234n, dropoutOffset: 7 })],
  [
    'dropout, 64-bit seed, causal, odd shape',
    { ...odd, Sk: 150 },
    () => ({ dropoutP: 0.5, dropoutSeed: 0x9e3779b97f4a7c15n, dropoutOffset: 123456, isCausal: true }),
  ],
  ['negative scale', square, () => ({ scale: -0.3 })],
];

describe.skipIf(!load.ok)(`cpu-flash forward (${load.ok ? isas.join(', ') : 'addon not built'})`, () => {
  for (const isa of isas) {
    const flash = createCpuFlashBackend({ isa, threads: 2 });
    for (const dtype of DTYPES) {
      for (const [name, shape, opts, layout] of FEATURES) {
        it(`${isa} ${dtype}: ${name}`, () => {
          const p = params(shape, dtype, opts(dtype), 7, layout);
          const got = flash.forward(p);
          const ref = cpuMathBackend.forward(p);
          expect(maxAbsDiff(got.out, ref.out)).toBeLessThanOrEqual(TOL[dtype]);
          expect(maxAbsDiff(got.logsumexp, ref.logsumexp)).toBeLessThanOrEqual(dtype === 'float32' ? 2e-5 : 2e-2);
        });
      }
    }
  }

  // Packed sequences: odd lengths, an empty query side, an empty key side, GQA, every alignment.
  for (const isa of isas) {
    for (const dtype of DTYPES) {
      for (const [name, opts] of [
        ['plain', {}],
        [
          'causal lower-right + window + alibi + softcap',
          {
            isCausal: true,
            alignment: 'lowerRight',
            window: [20, 3],
            alibiSlopes: f32([0.2, 0.1, 0.05, 0.3]),
            softcap: 6,
          },
        ],
        ['dropout', { dropoutP: 0.4, dropoutSeed: 77n, dropoutOffset: 5 }],
      ] as const) {
        it(`${isa} ${dtype}: varlen ${name}`, () => {
          const p = varlenParams(
            [37, 0, 130, 5],
            [70, 9, 140, 0],
            { Hq: 4, Hk: 2, D: 24, Dv: 16 },
            dtype,
            opts as object,
            3,
          );
          const got = createCpuFlashBackend({ isa, threads: 2 }).forward(p);
          const ref = cpuMathBackend.forward(p);
          expect(got.out.shape).toEqual(ref.out.shape);
          expect(got.logsumexp.shape).toEqual(ref.logsumexp.shape);
          expect(maxAbsDiff(got.out, ref.out)).toBeLessThanOrEqual(TOL[dtype]);
          expect(maxAbsDiff(got.logsumexp, ref.logsumexp)).toBeLessThanOrEqual(dtype === 'float32' ? 2e-5 : 2e-2);
        });
      }
    }
  }

  // Decode-like GQA calls run with the query heads of a kv head grouped into one task.
  const decode: Shape = { B: 2, Hq: 8, Hk: 2, Sq: 3, Sk: 200, D: 40, Dv: 24 };
  for (const isa of isas) {
    for (const [name, opts] of [
      ['plain', {}],
      [
        'causal lower-right + alibi + softcap + window',
        {
          isCausal: true,
          alignment: 'lowerRight',
          alibiSlopes: f32([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]),
          softcap: 5,
          window: [50, -1],
        },
      ],
      ['dropout', { dropoutP: 0.3, dropoutSeed: 0x123456789n, dropoutOffset: 2 }],
    ] as const) {
      for (const dtype of DTYPES) {
        it(`${isa} ${dtype}: grouped decode, ${name}`, () => {
          const p = params(decode, dtype, opts as object, 9);
          const got = createCpuFlashBackend({ isa, threads: 2 }).forward(p);
          const ref = cpuMathBackend.forward(p);
          expect(maxAbsDiff(got.out, ref.out)).toBeLessThanOrEqual(TOL[dtype]);
          expect(maxAbsDiff(got.logsumexp, ref.logsumexp)).toBeLessThanOrEqual(dtype === 'float32' ? 2e-5 : 2e-2);
        });
      }
    }
  }

  // Short queries over few (batch, kv head) pairs split their keys into ranges merged by logsumexp (split-KV,
  // forward_f32.h key_splits): 2100 keys over 2 pairs are 4 ranges of 9 key blocks (the last 6), 4100 keys over
  // one pair 8 ranges of 9 (the last 2). The window and the lower-right diagonal leave ranges a row never sees; the mask turns the grouping
  // off (one task per query head) and empties whole rows.
  const splitDecode: Shape = { B: 1, Hq: 6, Hk: 2, Sq: 2, Sk: 2100, D: 40, Dv: 24 };
  const mqaDecode: Shape = { B: 1, Hq: 4, Hk: 1, Sq: 1, Sk: 4100, D: 64, Dv: 64 };
  const splitMask = () => {
    const v: number[] = [];
    for (let i = 0; i < splitDecode.Sq; i++)
      for (let j = 0; j < splitDecode.Sk; j++) v.push(i === 1 ? 0 : (j * 7) % 5 !== 0 ? 1 : 0);
    return tensor(v, [splitDecode.Sq, splitDecode.Sk], { dtype: 'bool' });
  };
  for (const isa of isas) {
    for (const [name, shape, opts] of [
      ['plain', splitDecode, () => ({})],
      ['one kv head, one query', mqaDecode, () => ({})],
      [
        'causal lower-right + alibi + softcap + window',
        splitDecode,
        () => ({
          isCausal: true,
          alignment: 'lowerRight',
          alibiSlopes: f32([0.01, 0.02, 0.03, 0.04, 0.05, 0.06]),
          softcap: 5,
          window: [300, -1],
        }),
      ],
      ['a window inside one range', splitDecode, () => ({ window: [20, 20] })],
      ['dropout', splitDecode, () => ({ dropoutP: 0.3, dropoutSeed: 0xfeedn, dropoutOffset: 11 })],
      ['bool mask with a fully masked row', splitDecode, () => ({ attnMask: splitMask() })],
    ] as const) {
      for (const dtype of DTYPES) {
        it(`${isa} ${dtype}: split-KV decode, ${name}`, () => {
          const p = params(shape, dtype, opts() as SdpaOptions, 13);
          const got = createCpuFlashBackend({ isa, threads: 2 }).forward(p);
          const ref = cpuMathBackend.forward(p);
          expect(maxAbsDiff(got.out, ref.out)).toBeLessThanOrEqual(TOL[dtype]);
          expect(maxAbsDiff(got.logsumexp, ref.logsumexp)).toBeLessThanOrEqual(dtype === 'float32' ? 2e-5 : 2e-2);
        });
      }
    }
  }

  it('split-KV decode gives the same bits at every thread count', () => {
    const p = params(splitDecode, 'float32', { isCausal: true, alignment: 'lowerRight' }, 5);
    const bits = (threads: number) => {
      const r = createCpuFlashBackend({ threads }).forward(p);
      return Buffer.concat([
        Buffer.from(r.out.toFloat32Array().buffer),
        Buffer.from(r.logsumexp.toFloat32Array().buffer),
      ]);
    };
    const one = bits(1);
    for (const threads of [2, 3, 16]) expect(bits(threads).equals(one), `${threads} threads`).toBe(true);
  });

  it('split-KV decode keeps NaN: a NaN key in one range makes its rows NaN', () => {
    const p = params(mqaDecode, 'float32', {}, 6);
    const k = p.key.toFloat32Array();
    k[1500 * mqaDecode.D + 3] = Number.NaN; // key 1500 (block 23): the third of eight ranges
    const withNaN = params(mqaDecode, 'float32', {}, 6);
    const key = tensor(Array.from(k), [...p.key.shape], { dtype: 'float32' });
    const q = normalizeParams(withNaN.query, key, withNaN.value, { enableGqa: true });
    const got = createCpuFlashBackend({ threads: 2 }).forward(q);
    expect([...got.out.toFloat32Array()].every(Number.isNaN)).toBe(true);
    expect([...got.logsumexp.toFloat32Array()].every(Number.isNaN)).toBe(true);
  });

  it('fully masked rows give 0 and logsumexp -inf, never NaN', () => {
    const s: Shape = { B: 1, Hq: 1, Hk: 1, Sq: 5, Sk: 70, D: 8, Dv: 8 };
    const p = params(s, 'float32', { attnMask: tensor(new Array(5 * 70).fill(0), [5, 70], { dtype: 'bool' }) });
    const { out, logsumexp } = createCpuFlashBackend().forward(p);
    expect([...out.toFloat32Array()].every((x) => x === 0)).toBe(true);
    expect([...logsumexp.toFloat32Array()].every((x) => x === -Infinity)).toBe(true);
  });

  // bf16 on bf16 pairs (forward_bf16_pairs.h): 1 thread packs its own K and V^T; 16 threads on 2 pairs take
  // the shared packing pass (the call is large enough for 16: threads.ts). The packed layout is the same, so
  // the bits are.
  for (const isa of isas.filter((i) => i === 'avx512bf16' || i === 'amx')) {
    it(`${isa} bfloat16: own and shared packing give the same bits`, () => {
      const p = params({ ...gqa, Sq: 512, Sk: 520 }, 'bfloat16', { isCausal: true }, 8);
      const own = createCpuFlashBackend({ isa, threads: 1 }).forward(p).out.storage as Uint16Array;
      const shared = createCpuFlashBackend({ isa, threads: 16 }).forward(p).out.storage as Uint16Array;
      expect(Buffer.from(shared.buffer).equals(Buffer.from(own.buffer))).toBe(true);
    });
  }

  it('gives the same result for every thread count', () => {
    const p = params(gqa, 'float32', { isCausal: true });
    const one = createCpuFlashBackend({ threads: 1 }).forward(p).out.toFloat32Array();
    const two = createCpuFlashBackend({ threads: 2 }).forward(p).out.toFloat32Array();
    expect(Buffer.from(two.buffer).equals(Buffer.from(one.buffer))).toBe(true);
  });

  // Its outputs' host storage is not zero-filled (core's emptyOutput 'whole'), so the kernel must write every
  // element itself: rows that see no key included. Here out and logsumexp start as NaN (finite inputs).
  it('writes every element of out and logsumexp', () => {
    const native = load.ok ? load.addon : null;
    const calls: Array<[string, SdpaParams]> = [
      ...FEATURES.map(([name, shape, opts, layout]): [string, SdpaParams] => [
        name,
        params(shape, 'float32', opts('float32'), 7, layout),
      ]),
      [
        'varlen, empty sequences',
        varlenParams([37, 0, 130, 5], [70, 9, 140, 0], { Hq: 4, Hk: 2, D: 24, Dv: 16 }, 'bfloat16'),
      ],
      ['grouped decode', params(decode, 'float16', {}, 9)],
      ['split-KV decode, a window inside one range', params(splitDecode, 'bfloat16', { window: [20, 20] }, 9)],
      [
        'sequsedK with a row that uses no key',
        params(gqa, 'float32', { sequsedK: tensor([0], [1], { dtype: 'int32' }), isCausal: true }, 4),
      ],
    ];
    for (const isa of isas) {
      for (const [name, p] of calls) {
        const { out, logsumexp } = nanOutputs(p);
        native!.forward(forwardDesc(p, out, logsumexp, isa, 2));
        expect([...out.toFloat32Array()].some(Number.isNaN), `${isa} ${name}: out`).toBe(false);
        expect([...logsumexp.toFloat32Array()].some(Number.isNaN), `${isa} ${name}: logsumexp`).toBe(false);
      }
    }
  });
});
