// flash-cuda's forward over its own case table, through the conformance harness (float64 cpu-math
// reference, the accuracy rule, poisoned outputs): the head-dim buckets, odd head dims and lengths,
// every feature in both alignments, packed GQA, split-KV forced by count, strided and misaligned
// inputs, varlen, and 64-bit offsets. The Hopper kernels forced by name are gpu-table-sm90.test.ts;
// the backward's table is gpu-table-backward.test.ts.
import '@attn/cpu';
import {
  describeCaseTable,
  describeWhereRunnable,
  headDimGrid,
  type Short,
  type TableCase,
  tableCase as spec,
} from '@attn/conformance';
import { fromStorage, sdpaForward, type Tensor, tensor } from '@attn/core';
import { scaledMaxError } from '@attn/core/testing';
import { allocate, copyHostToDevice, fill } from '@attn/cuda';
import { expect, it } from 'vitest';

import { sharedCases } from './gpu-table-shared.js';
import { flashCudaBackend, flashForward } from './index.js';

const av = flashCudaBackend.availability();

const splits = (numSplits: number): Partial<TableCase> => ({
  launch: { forward: (p) => flashForward(p, { numSplits }) },
});
const fwd = { forwardOnly: true } as const;

// The decode kernels forced by name (the plan runs them only for lean calls with at most 16 packed rows): their
// features at odd sizes, more rows than a tile holds, and misaligned tensors (the element-wise path). Each case
// runs the 64-key tile and, at D 128, the 128-key tile of 8 warps ('decode_wide').
const decodeKernels = (c: Short): string[] => {
  const prefix = `${c.dtype === 'float16' ? 'fp16' : 'bf16'}_d${(c.D ?? 64) <= 64 ? 64 : 128}`;
  return (c.D ?? 64) <= 64 ? [`${prefix}_decode`] : [`${prefix}_decode`, `${prefix}_decode_wide`];
};
const onDecode = (kernel: string, numSplits?: number): Partial<TableCase> => ({
  launch: {
    forward: (p) => flashForward(p, { kernel, ...(numSplits !== undefined ? { numSplits } : {}) }),
  },
});
const DECODE_CASES: Array<[string, Short, number?]> = [
  ['gqa 8/2 sq1 sk1000 D128', { B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1000, D: 128 }],
  ['gqa 8/2 sq1 sk1000 D128, 5 splits', { B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1000, D: 128 }, 5],
  // sm90 merges a pair of splits in a cluster and more through the partials and the combine; splits 9-11 of
  // the 12 see no key (16 key tiles, 2 per split).
  ['gqa 8/2 sq1 sk1000 D128, 2 splits', { B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1000, D: 128 }, 2],
  ['gqa 8/2 sq1 sk1000 D128, 12 splits', { B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1000, D: 128 }, 12],
  ['fp16 D64 mha sq1 sk700, 2 splits', { dtype: 'float16', Hq: 3, Sq: 1, Sk: 700, D: 64 }, 2],
  ['sequsedK gqa 8/2 sq2, 2 splits (a row using no key)', { Hq: 8, Hk: 2, Sq: 2, Sk: 600, D: 128, used: [0, 333] }, 2],
  ['mha sq1 sk17 D120', { Hq: 3, Sq: 1, Sk: 17, D: 120 }],
  ['mqa sq1 sk1 D40', { Hq: 4, Hk: 1, Sq: 1, Sk: 1, D: 40 }],
  [
    'fp16 D64 gqa 4/1 sq4 sk333 causal lowerRight',
    { dtype: 'float16', Hq: 4, Hk: 1, Sq: 4, Sk: 333, causal: true, alignment: 'lowerRight' },
  ],
  [
    'gqa 4/1 sq3 sk500 window[-1,3] lowerRight',
    { Hq: 4, Hk: 1, Sq: 3, Sk: 500, D: 128, window: [-1, 3], alignment: 'lowerRight' },
  ],
  ['mha sq16 sk200 causal upperLeft', { Hq: 2, Sq: 16, Sk: 200, D: 128, causal: true }],
  ['gqa 8/1 sq3 sk300: 24 rows, two row tiles', { Hq: 8, Hk: 1, Sq: 3, Sk: 300, D: 128 }],
  ['D33 (element-wise loads) gqa 4/2 sq1 sk300', { Hq: 4, Hk: 2, Sq: 1, Sk: 300, D: 33 }],
  ['misaligned rows gqa 4/2 sq2 sk257', { Hq: 4, Hk: 2, Sq: 2, Sk: 257, D: 128, misalign: 'rows' }, 3],
  ['varlen gqa 8/2', { Hq: 8, Hk: 2, D: 128, varlen: { q: [1, 1, 1], k: [500, 1300, 7] } }],
  ['sequsedK gqa 8/2 (rows using none and some keys)', { Hq: 8, Hk: 2, Sq: 1, Sk: 600, D: 128, used: [0, 333] }, 4],
  ['fp16 D128 mha sq1 sk1000 bshd', { dtype: 'float16', Hq: 2, Sq: 1, Sk: 1000, D: 128, layout: 'bshd' }],
];

function cases(): TableCase[] {
  const list: TableCase[] = headDimGrid(fwd);
  const add = (name: string, c: Short, extra: Partial<TableCase> = {}) =>
    list.push(spec(name, c, { ...fwd, ...extra }));
  sharedCases(add);
  add('bf16 odd D33', { D: 33, Sq: 70, Sk: 90 });
  add('fp16 odd D100 causal', { dtype: 'float16', D: 100, Sq: 70, Sk: 90, causal: true });
  for (const alignment of ['upperLeft', 'lowerRight'] as const)
    add(`window[7,-1] causal ${alignment}`, { Sq: 300, Sk: 120, window: [7, -1], causal: true, alignment });
  add('mqa 4/1 causal', { Hq: 4, Hk: 1, causal: true });
  add('gqa decode sq1 sk1000 (packed GQA, split-KV)', { B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1000, D: 128 });
  add('gqa sq4 sk700 lowerRight causal (packed GQA)', {
    B: 2,
    Hq: 8,
    Hk: 2,
    Sq: 4,
    Sk: 700,
    D: 128,
    causal: true,
    alignment: 'lowerRight',
  });
  add('gqa sq5 window alibi dropout (packed GQA)', {
    B: 2,
    Hq: 6,
    Hk: 2,
    Sq: 5,
    Sk: 333,
    alibi: 'perHead',
    window: [50, 0],
    alignment: 'lowerRight',
    dropoutP: 0.2,
  });
  add('forced 3 splits', { Sq: 50, Sk: 700 }, splits(3));
  add(
    'forced 5 splits causal window alibi',
    { Sq: 64, Sk: 900, alibi: 'perHead', causal: true, alignment: 'lowerRight', window: [300, 0] },
    splits(5),
  );
  add('forced 4 splits fp16 D256', { dtype: 'float16', D: 256, Sq: 20, Sk: 600 }, splits(4));
  add('varlen decode gqa (packed)', { Hq: 8, Hk: 2, D: 128, varlen: { q: [1, 1, 1], k: [500, 1300, 7] } });
  for (const [name, c, numSplits] of DECODE_CASES)
    for (const kernel of decodeKernels(c)) add(`${kernel.slice(5)}: ${name}`, c, onDecode(kernel, numSplits));
  return list;
}

describeWhereRunnable('flash-cuda forward case table', av.ok ? null : av.reason, () => {
  describeCaseTable('flash-cuda', av.ok ? cases() : []);

  it('int64 offsets: a batch stride of 2^31 elements (b * stride overflows int32)', () => {
    const [B, H, S, D] = [2, 2, 128, 64];
    const stride = 2 ** 31;
    const per = H * S * D;
    const storage = allocate((stride + 3 * per + 64) * 2, 0);
    try {
      fill(storage, 0, storage.bytes, 0);
      // q, k, v of batch b at b * stride (+ 0, per, 2 per): the second batch lies past 2^31 elements.
      const host = [1, 2, 3].map((seed) =>
        tensor(
          Float64Array.from({ length: B * per }, (_, i) => Math.sin(seed * 7.1 + i * 0.37)),
          [B, H, S, D],
          { dtype: 'bfloat16' },
        ),
      );
      const views = host.map((t, n): Tensor => {
        const bits = t.hostData() as Uint16Array;
        for (let b = 0; b < B; b++) {
          const chunk = bits.subarray(b * per, (b + 1) * per);
          copyHostToDevice(
            storage,
            (b * stride + n * per) * 2,
            new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength),
          );
        }
        return fromStorage(storage, [B, H, S, D], {
          dtype: 'bfloat16',
          strides: [stride, S * D, D, 1],
          offset: n * per,
        });
      });
      const got = sdpaForward(views[0]!, views[1]!, views[2]!, { backends: ['flash-cuda'] });
      const f64 = host.map((t) => t.toDType('float64'));
      const ref = sdpaForward(f64[0]!, f64[1]!, f64[2]!, { backends: ['cpu-math'] });
      expect(scaledMaxError(got.out, ref.out)).toBeLessThan(2.5e-2); // bf16 output rounding and accumulation
      expect(scaledMaxError(got.logsumexp, ref.logsumexp)).toBeLessThan(2e-3);
      got.out.dispose();
      got.logsumexp.dispose();
    } finally {
      storage.dispose();
    }
  });
});
