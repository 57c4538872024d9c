// flash-cuda's decode kernel (native/src/fwd/decode_kernel.h) forced by name, at split counts 1 to 8 (the
// splits of a CTA group merge inside one cluster), through the conformance harness: GQA groups 1 to 16, query
// lengths 1 to 16 rows per KV head, KV head counts that leave warps of the last head group idle, short and
// odd key lengths (empty splits), causal in both alignments, a right window bound, sequsedK, varlen, strided
// [B, S, H, D] views, fp16, D 40 / 64 / 128. Paged K/V on it: gpu-paged.test.ts. Runs on sm90 and newer
// (clusters); elsewhere skipped with the reason.
import '@attn/cpu';
import { describeCaseTable, describeWhereRunnable, type TableCase, tableCase as spec } from '@attn/conformance';
import { deviceProperties } from '@attn/cuda';
import { flashCudaBackend, flashForward } from './index.js';

function blocker(): string | null {
  const av = flashCudaBackend.availability();
  if (!av.ok) return av.reason;
  const props = deviceProperties(0);
  if (props.major < 9)
    return `the decode kernel needs thread-block clusters (sm90+), this is sm_${props.major}${props.minor}`;
  return null;
}

const decode = (dtype: 'bfloat16' | 'float16', D: number) =>
  `${dtype === 'float16' ? 'fp16' : 'bf16'}_d${D <= 64 ? 64 : 128}_decode`;
const forced = (kernel: string, numSplits: number): Partial<TableCase> => ({
  forwardOnly: true,
  launch: { forward: (p) => flashForward(p, { kernel, numSplits }) },
});

function cases(): TableCase[] {
  const list: TableCase[] = [];
  const add = (name: string, c: Parameters<typeof spec>[1], numSplits: number) => {
    const dtype = c.dtype ?? 'bfloat16';
    list.push(spec(`decode ${name} splits ${numSplits}`, c, forced(decode(dtype, c.D ?? 64), numSplits)));
  };
  for (const numSplits of [1, 3, 8]) {
    add('gqa 32/8 sq1 sk2000 D128', { B: 2, Hq: 32, Hk: 8, Sq: 1, Sk: 2000, D: 128 }, numSplits);
    add('gqa 12/3 sq1 sk1000 D128 (idle warp)', { B: 3, Hq: 12, Hk: 3, Sq: 1, Sk: 1000, D: 128 }, numSplits);
    add('mqa 16/1 sq1 sk777 D64', { B: 2, Hq: 16, Hk: 1, Sq: 1, Sk: 777, D: 64 }, numSplits);
    add('mha 5/5 sq16 sk300 D64', { B: 2, Hq: 5, Hk: 5, Sq: 16, Sk: 300, D: 64 }, numSplits);
    add(
      'gqa 8/2 sq4 sk700 causal lowerRight',
      { B: 2, Hq: 8, Hk: 2, Sq: 4, Sk: 700, D: 128, causal: true, alignment: 'lowerRight' },
      numSplits,
    );
    add('gqa 8/2 sq4 sk700 causal upperLeft', { B: 2, Hq: 8, Hk: 2, Sq: 4, Sk: 700, D: 128, causal: true }, numSplits);
    add('gqa 8/4 sq2 sk17 (empty splits)', { B: 2, Hq: 8, Hk: 4, Sq: 2, Sk: 17, D: 128 }, numSplits);
    add('sq1 sk1', { B: 1, Hq: 4, Hk: 4, Sq: 1, Sk: 1, D: 64 }, numSplits);
    add('fp16 gqa 16/4 sq1 sk1000 D40', { dtype: 'float16', B: 2, Hq: 16, Hk: 4, Sq: 1, Sk: 1000, D: 40 }, numSplits);
    add(
      'fp16 gqa 16/1 sq1 sk600 D128 (group 16)',
      { dtype: 'float16', B: 1, Hq: 16, Hk: 1, Sq: 1, Sk: 600, D: 128 },
      numSplits,
    );
    add(
      'window[-1,5] lowerRight sq3',
      { B: 2, Hq: 4, Hk: 4, Sq: 3, Sk: 400, D: 64, window: [-1, 5], alignment: 'lowerRight' },
      numSplits,
    );
    add('strided bshd gqa 8/2 sq1', { layout: 'bshd', B: 2, Hq: 8, Hk: 2, Sq: 1, Sk: 1500, D: 128 }, numSplits);
    add('sequsedK gqa 8/2 sq1', { B: 3, Hq: 8, Hk: 2, Sq: 1, Sk: 900, D: 128, used: [0, 1, 899] }, numSplits);
    add('varlen gqa 8/2', { Hq: 8, Hk: 2, D: 128, varlen: { q: [1, 2, 1], k: [500, 1300, 7] } }, numSplits);
  }
  return list;
}

const reason = blocker();
describeWhereRunnable('flash-cuda decode kernel forced by name', reason, () =>
  describeCaseTable('flash-cuda', reason === null ? cases() : []),
);
