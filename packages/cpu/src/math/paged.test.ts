// Paged K/V on the reference: a call on block pools addressed through a shuffled block table gives
// exactly (float64, bit for bit) what the packed call on the gathered keys gives, for every block
// size, lengths that end mid-block, and every feature a paged call takes; rows no sequence reads
// hold NaN, so a wrong read shows.
import { sdpaVarlen, tensor } from '@attn/core';
import type { ForwardResult, Tensor, VarlenOptions } from '@attn/core';
import { pagedLayout, toPool } from '@attn/conformance';
import { describe, expect, it } from 'vitest';
import { f64, normal } from '../../test/math/helpers.js';

const HQ = 4;
const HK = 2;
const D = 5;
const DV = 3;

const int32 = (xs: ArrayLike<number>, shape = [xs.length]) => tensor(xs, shape, { dtype: 'int32' });
const offsets = (l: readonly number[]) => l.reduce<number[]>((a, n) => [...a, a[a.length - 1]! + n], [0]);

interface Layout {
  readonly lensQ: readonly number[];
  readonly lensK: readonly number[];
}

/** The packed call and the same call on pools of blockSize (seeded shuffle), both on cpu-math. */
function both(
  layout: Layout,
  blockSize: number,
  opts: Partial<VarlenOptions>,
  seed: number,
): { paged: ForwardResult; packed: ForwardResult } {
  const { lensQ, lensK } = layout;
  const [oq, ok] = [offsets(lensQ), offsets(lensK)];
  const q = normal([oq[oq.length - 1]!, HQ, D], seed);
  const k = normal([ok[ok.length - 1]!, HK, D], seed + 1);
  const v = normal([ok[ok.length - 1]!, HK, DV], seed + 2);
  const pages = pagedLayout(lensK, blockSize, BigInt(seed));
  const pool = (t: Tensor, cols: number) =>
    f64(toPool(t.toFloat64Array(), lensK, HK, cols, pages, NaN), [pages.numBlocks, blockSize, HK, cols]);
  const base: VarlenOptions = {
    cuSeqlensQ: int32(oq),
    cuSeqlensK: int32(ok),
    maxSeqlenQ: Math.max(...lensQ),
    maxSeqlenK: Math.max(...lensK),
    enableGqa: true,
    backends: ['cpu-math'],
    ...opts,
  };
  const blockTable = int32(pages.table, [lensK.length, pages.maxBlocksPerSeq]);
  return {
    paged: sdpaVarlen(q, pool(k, D), pool(v, DV), { ...base, blockTable }),
    packed: sdpaVarlen(q, k, v, base),
  };
}

function expectSame(got: ForwardResult, want: ForwardResult, what: string): void {
  expect(got.backend).toBe('cpu-math');
  expect([...got.out.toFloat64Array()], `${what}: out`).toEqual([...want.out.toFloat64Array()]);
  expect([...got.logsumexp.toFloat64Array()], `${what}: logsumexp`).toEqual([...want.logsumexp.toFloat64Array()]);
}

const DECODE: Layout = { lensQ: [1, 1, 1, 1], lensK: [37, 1, 64, 300] };
const PREFILL: Layout = { lensQ: [7, 1, 20], lensK: [70, 3, 20] };
const slopes = tensor(
  Array.from({ length: 4 * HQ }, (_, n) => 0.05 + 0.03 * n),
  [4, HQ],
  { dtype: 'float32' },
);

const FEATURES: [string, Layout, () => Partial<VarlenOptions>][] = [
  ['plain decode', DECODE, () => ({})],
  ['decode, causal lower-right', DECODE, () => ({ isCausal: true, alignment: 'lowerRight' })],
  [
    'decode, sequsedK (one row empty, one cut mid-block)',
    DECODE,
    () => ({ sequsedK: int32([20, 0, 64, 255]), isCausal: true, alignment: 'lowerRight' }),
  ],
  ['prefill, causal upper-left', PREFILL, () => ({ isCausal: true })],
  [
    'prefill, causal lower-right with a window',
    PREFILL,
    () => ({ isCausal: true, alignment: 'lowerRight', window: [9, 0] }),
  ],
  ['prefill, two-sided window upper-left', PREFILL, () => ({ window: [3, 4] })],
  [
    'prefill, ALiBi [B, Hq] lower-right and softcap',
    PREFILL,
    () => ({ alibiSlopes: slopes.narrow(0, 0, 3).contiguous(), alignment: 'lowerRight', softcap: 2 }),
  ],
  [
    'prefill, dropout with the same seed',
    PREFILL,
    () => ({ dropoutP: 0.3, dropoutSeed: 77n, dropoutOffset: 5, isCausal: true, alignment: 'lowerRight' }),
  ],
  [
    'decode, ALiBi [Hq], softcap, sequsedK',
    DECODE,
    () => ({
      alibiSlopes: slopes.narrow(0, 0, 1).reshape([HQ]).contiguous(),
      softcap: 3,
      sequsedK: int32([37, 1, 33, 1]),
    }),
  ],
];

describe('paged K/V on cpu-math equals the packed call on the gathered keys, bit for bit', () => {
  for (const blockSize of [1, 16, 64, 256]) {
    for (const [name, layout, opts] of FEATURES) {
      it(`block ${blockSize}: ${name}`, () => {
        const { paged, packed } = both(layout, blockSize, opts(), 11 + blockSize);
        expectSame(paged, packed, name);
        expect(
          paged.out.toFloat64Array().every((x) => Number.isFinite(x)),
          'no NaN from an unread row',
        ).toBe(true);
      });
    }
  }

  it('strided pools (a head-sliced view) read through their strides', () => {
    const lensK = [20, 9];
    const ok = offsets(lensK);
    const q = normal([2, 2, D], 3);
    const k = normal([ok[2]!, 2, D], 4);
    const v = normal([ok[2]!, 2, DV], 5);
    const pages = pagedLayout(lensK, 8, 9n);
    // Pools with 4 heads, of which the call takes heads 1 and 2: strides of a view, not contiguous.
    const wide = (t: Tensor, cols: number) => {
      const two = toPool(t.toFloat64Array(), lensK, 2, cols, pages, NaN);
      const four = new Float64Array(two.length * 2).fill(NaN);
      for (let r = 0; r < two.length / (2 * cols); r++)
        for (let h = 0; h < 2; h++)
          four.set(two.subarray((r * 2 + h) * cols, (r * 2 + h + 1) * cols), (r * 4 + h + 1) * cols);
      return f64(four, [pages.numBlocks, 8, 4, cols]).narrow(2, 1, 2);
    };
    const opts: VarlenOptions = {
      cuSeqlensQ: int32([0, 1, 2]),
      cuSeqlensK: int32(ok),
      maxSeqlenQ: 1,
      maxSeqlenK: 20,
      backends: ['cpu-math'],
    };
    const kp = wide(k, D);
    expect(kp.isContiguous()).toBe(false);
    const got = sdpaVarlen(q, kp, wide(v, DV), { ...opts, blockTable: int32(pages.table, [2, pages.maxBlocksPerSeq]) });
    expectSame(got, sdpaVarlen(q, k, v, opts), 'strided');
  });
});
