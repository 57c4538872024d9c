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
