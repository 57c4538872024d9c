// cpu-flash with paged K/V: on every SIMD level this CPU runs and every dtype, a call on block pools
// addressed through a shuffled table (NaN in every row no sequence reads) gives bit for bit what the
// packed call on the same keys gives (the products walk each key tile by runs of a block, in the
// same order), and matches cpu-math; block sizes 1, 16, 64 and 256, lengths that end mid-block,
// decode (keys read as they are) and prefill (keys converted or packed once per call); and the
// addon re-checks the table it is given.
import { normalizeVarlenParams, randn, tensor } from '@attn/core';
import type { FloatDType, SdpaParams, Tensor, VarlenOptions } from '@attn/core';
import { pagedLayout, toPool } from '@attn/conformance';
import { describe, expect, it } from 'vitest';
import { cpuMathBackend } from '../math/backend.js';
import { createCpuFlashBackend } from './backend.js';
import type { CpuFlashIsa } from './backend.js';
import { forwardDesc, forwardOutputs } from './marshal.js';
import { addon } from './native.js';
import { f32, maxAbsDiff, TOL } from './testing.js';

const load = addon();
const isas = (load.ok ? load.addon.buildInfo().runnableIsas : []) as CpuFlashIsa[];
const int32 = (xs: ArrayLike<number>, shape = [xs.length]) => tensor(Array.from(xs), shape, { dtype: 'int32' });
const offsets = (l: readonly number[]) => l.reduce<number[]>((a, n) => [...a, a[a.length - 1]! + n], [0]);

interface Layout {
  readonly lensQ: readonly number[];
  readonly lensK: readonly number[];
  readonly Hq: number;
  readonly Hk: number;
  readonly D: number;
  readonly Dv: number;
}

// Decode: G * Sq <= 64 query rows per kv head, so fp16/bf16 keys are read as they are.
const DECODE: Layout = { lensQ: [1, 1, 1, 1], lensK: [37, 1, 200, 300], Hq: 8, Hk: 2, D: 64, Dv: 64 };
// Prefill chunks: enough query rows that fp16/bf16 keys are converted (or bf16-packed) once per call.
const PREFILL: Layout = { lensQ: [70, 3, 90], lensK: [130, 3, 333], Hq: 4, Hk: 2, D: 40, Dv: 24 };

/** The params of the packed call and of the paged one on the same (rounded) values. */
function pair(
  l: Layout,
  dtype: FloatDType,
  blockSize: number,
  opts: Partial<VarlenOptions>,
  seed: number,
): { paged: SdpaParams; packed: SdpaParams } {
  const [oq, ok] = [offsets(l.lensQ), offsets(l.lensK)];
  const q = randn([oq[oq.length - 1]!, l.Hq, l.D], { dtype, seed });
  const k = randn([ok[ok.length - 1]!, l.Hk, l.D], { dtype, seed: seed + 1 });
  const v = randn([ok[ok.length - 1]!, l.Hk, l.Dv], { dtype, seed: seed + 2 });
  const pages = pagedLayout(l.lensK, blockSize, BigInt(seed));
  const pool = (t: Tensor, cols: number) =>
    tensor(toPool(t.toFloat64Array(), l.lensK, l.Hk, cols, pages, NaN), [pages.numBlocks, blockSize, l.Hk, cols], {
      dtype,
    });
  const base: VarlenOptions = {
    cuSeqlensQ: int32(oq),
    cuSeqlensK: int32(ok),
    maxSeqlenQ: Math.max(...l.lensQ),
    maxSeqlenK: Math.max(...l.lensK),
    enableGqa: l.Hq !== l.Hk,
    ...opts,
  };
  const blockTable = int32(pages.table, [l.lensK.length, pages.maxBlocksPerSeq]);
  return {
    paged: normalizeVarlenParams(q, pool(k, l.D), pool(v, l.Dv), { ...base, blockTable }),
    packed: normalizeVarlenParams(q, k, v, base),
  };
}

const slopes = (b: number, h: number) =>
  f32(
    Array.from({ length: b * h }, (_, n) => 0.02 + 0.01 * n),
    [b, h],
  );

const FEATURES: [string, Layout, (l: Layout) => Partial<VarlenOptions>][] = [
  ['decode, causal lower-right', DECODE, () => ({ isCausal: true, alignment: 'lowerRight' })],
  [
    'decode, sequsedK, softcap, ALiBi',
    DECODE,
    (l) => ({
      sequsedK: int32([20, 0, 129, 300]),
      softcap: 5,
      alibiSlopes: slopes(4, l.Hq),
      isCausal: true,
      alignment: 'lowerRight',
    }),
  ],
  [
    'prefill, causal lower-right, window',
    PREFILL,
    () => ({ isCausal: true, alignment: 'lowerRight', window: [100, 0] }),
  ],
  ['prefill, causal upper-left, dropout', PREFILL, () => ({ isCausal: true, dropoutP: 0.2, dropoutSeed: 99n })],
];

describe.skipIf(!load.ok)('cpu-flash paged K/V', () => {
  for (const isa of isas) {
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      for (const blockSize of [1, 16, 64, 256]) {
        for (const [name, layout, opts] of FEATURES) {
          it(`${isa} ${dtype} block ${blockSize}: ${name}`, () => {
            const { paged, packed } = pair(layout, dtype, blockSize, opts(layout), 3 + blockSize);
            const flash = createCpuFlashBackend({ isa, threads: 2 });
            expect(flash.rules.every((r) => r.check(paged, { device: null } as never) === null)).toBe(true);
            const got = flash.forward(paged);
            const same = flash.forward(packed);
            expect([...got.out.toFloat64Array()], 'out, paged vs packed').toEqual([...same.out.toFloat64Array()]);
            expect([...got.logsumexp.toFloat64Array()], 'lse, paged vs packed').toEqual([
              ...same.logsumexp.toFloat64Array(),
            ]);
            const ref = cpuMathBackend.forward(paged);
            expect(maxAbsDiff(got.out, ref.out)).toBeLessThanOrEqual(TOL[dtype]);
            expect(maxAbsDiff(got.logsumexp, ref.logsumexp)).toBeLessThanOrEqual(TOL[dtype] * 4);
          });
        }
      }
    }
  }
});

describe.skipIf(!load.ok)('the addon re-checks the block table', () => {
  const native = load.ok ? load.addon : null!;
  const { paged } = pair(DECODE, 'float32', 16, {}, 1);
  const desc = () => {
    const o = forwardOutputs(paged);
    return forwardDesc(paged, o.out, o.logsumexp, 'auto', 2);
  };

  it('takes the good descriptor', () => {
    expect(() => native.forward(desc())).not.toThrow();
  });

  const bad: [string, (d: ReturnType<typeof desc>) => unknown][] = [
    [
      'a read entry outside the pool',
      (d) => ({
        ...d,
        paged: { ...d.paged!, table: d.paged!.table.map((e, i) => (i === 0 ? d.paged!.numBlocks : e)) },
      }),
    ],
    [
      'a negative read entry',
      (d) => ({ ...d, paged: { ...d.paged!, table: d.paged!.table.map((e, i) => (i === 0 ? -1 : e)) } }),
    ],
    ['a table too short for B rows', (d) => ({ ...d, paged: { ...d.paged!, table: d.paged!.table.subarray(0, 3) } })],
    ['a table too narrow for the longest sequence', (d) => ({ ...d, paged: { ...d.paged!, tableStride: 2 } })],
    [
      'a pool smaller than numBlocks says',
      (d) => ({ ...d, paged: { ...d.paged!, numBlocks: d.paged!.numBlocks + 50 } }),
    ],
    [
      'a table that is not an Int32Array',
      (d) => ({ ...d, paged: { ...d.paged!, table: Float32Array.from(d.paged!.table) } }),
    ],
    [
      'a keyStart that moves a row past its blocks',
      (d) => ({ ...d, paged: { ...d.paged!, keyStart: Int32Array.from([0, 0, 0, 300]) } }),
    ],
    ['a negative keyStart', (d) => ({ ...d, paged: { ...d.paged!, keyStart: Int32Array.from([0, -1, 0, 0]) } })],
  ];
  for (const [name, patch] of bad) {
    it(`throws ATTN_CPU_FLASH_ARGS for ${name}`, () => {
      expect(() => native.forward(patch(desc()) as never)).toThrow(
        expect.objectContaining({ code: 'ATTN_CPU_FLASH_ARGS' }),
      );
    });
  }
});
