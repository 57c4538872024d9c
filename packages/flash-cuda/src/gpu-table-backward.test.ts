// flash-cuda's backward over its own case table, through the conformance harness (dq, dk, dv
// against cpu-math's float64 backward with the accuracy rule and its FlashAttention-form allowance,
// poisoned gradients, bitwise reproducibility of the deterministic mode): the head-dim buckets, odd
// sizes, every feature in both alignments, strided and misaligned inputs, varlen and sequsedK.
import '@attn/cpu';
import { describeCaseTable, describeWhereRunnable, headDimGrid, type TableCase, tableCase as spec } from '@attn/conformance';

import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();

function cases(): TableCase[] {
  const list: TableCase[] = headDimGrid().map((c) => ({ ...c, name: `bwd ${c.name}` }));
  const add = (name: string, c: Parameters<typeof spec>[1]) => list.push(spec(`bwd ${name}`, c));
  for (const D of [1, 8, 40, 72, 100, 250]) add(`bf16 odd D${D}`, { D, Sq: 70, Sk: 90 });
  add('s1', { B: 1, Hq: 1, Sq: 1, Sk: 1 });
  add('sq1 sk17', { Sq: 1, Sk: 17 });
  add('sq17 sk1', { Sq: 17, Sk: 1 });
  add('long keys sq64 sk3000', { Sq: 64, Sk: 3000, B: 1, Hq: 2 });
  add('long queries sq3000 sk64', { Sq: 3000, Sk: 64, B: 1, Hq: 2 });
  for (const alignment of ['upperLeft', 'lowerRight'] as const) {
    add(`causal ${alignment} sq37 sk300`, { Sq: 37, Sk: 300, causal: true, alignment });
    add(`causal ${alignment} sq300 sk37 (rows without keys)`, { Sq: 300, Sk: 37, causal: true, alignment });
    add(`window[16,0] ${alignment} sq150 sk260`, { Sq: 150, Sk: 260, window: [16, 0], alignment });
    add(`window[40,9] ${alignment}`, { Sq: 200, Sk: 170, window: [40, 9], alignment });
    add(`window[-1,5] ${alignment}`, { Sq: 120, Sk: 300, window: [-1, 5], alignment });
    add(`alibi[H] causal ${alignment}`, { Sq: 100, Sk: 150, alibi: 'perHead', causal: true, alignment });
  }
  add('alibi[B,H]', { Sq: 90, Sk: 140, alibi: 'perBatchHead' });
  add('softcap 5', { Sq: 100, Sk: 170, softcap: 5, scale: 0.5 });
  add('softcap 30 causal alibi', { Sq: 150, Sk: 150, alibi: 'perHead', softcap: 30, causal: true });
  add('negative scale', { scale: -0.2 });
  add('gqa 8/2', { Hq: 8, Hk: 2 });
  add('mqa 4/1 causal D128', { Hq: 4, Hk: 1, D: 128, causal: true });
  add('gqa 6/2 D256 window', { Hq: 6, Hk: 2, D: 256, Sq: 90, Sk: 150, window: [30, 5] });
  add('dropout 0.17', { Sq: 130, Sk: 150, dropoutP: 0.17 });
  add('dropout 0.5 causal gqa fp16', { dtype: 'float16', Hq: 4, Hk: 2, Sq: 97, Sk: 97, dropoutP: 0.5, causal: true });
  add('dropout D256 softcap', { D: 256, Sq: 70, Sk: 90, dropoutP: 0.2, softcap: 10 });
  add('strided bshd', { layout: 'bshd', Hq: 4, Sq: 77, Sk: 99 });
  add('strided bshd D72 gqa causal', { layout: 'bshd', D: 72, Hq: 4, Hk: 2, Sq: 77, Sk: 99, causal: true });
  add('misaligned base (element-wise path)', { misalign: 'base', Sq: 60, Sk: 80 });
  add('deterministic', { Sq: 300, Sk: 300, deterministic: true });
  add('deterministic causal gqa D128', { Hq: 4, Hk: 2, D: 128, Sq: 257, Sk: 257, deterministic: true, causal: true });
  add('deterministic D256 dropout alibi', { D: 256, Sq: 100, Sk: 120, alibi: 'perHead', deterministic: true, dropoutP: 0.1 });
  add('deterministic fp16 D192 window lowerRight', { dtype: 'float16', D: 192, Sq: 90, Sk: 200, deterministic: true, window: [20, 0], alignment: 'lowerRight' });
  add('varlen', { varlen: { q: [5, 17, 1, 64], k: [9, 17, 30, 130] } });
  add('varlen causal lowerRight gqa', { Hq: 4, Hk: 2, varlen: { q: [5, 130, 1], k: [9, 120, 300] }, causal: true, alignment: 'lowerRight' });
  add('varlen window dropout', { varlen: { q: [70, 3], k: [90, 200] }, window: [20, 3], dropoutP: 0.3 });
  add('varlen deterministic alibi softcap', { D: 128, alibi: 'perHead', varlen: { q: [40, 7], k: [33, 90] }, deterministic: true, softcap: 4 });
  // sequsedK: rows using all, some and none of their keys (the dK/dV of the rest must come out 0).
  add('sequsedK', { B: 3, Sq: 130, Sk: 300, used: [300, 0, 77] });
  add('sequsedK causal lowerRight gqa D128', { B: 3, Hq: 4, Hk: 2, D: 128, Sq: 100, Sk: 260, used: [1, 259, 0], causal: true, alignment: 'lowerRight' });
  add('sequsedK window alibi dropout lowerRight', { B: 2, Sq: 90, Sk: 200, alibi: 'perBatchHead', used: [150, 33], window: [20, 5], alignment: 'lowerRight', dropoutP: 0.2 });
  add('sequsedK deterministic causal D256', { B: 2, D: 256, Sq: 70, Sk: 150, used: [0, 100], deterministic: true, causal: true });
  add('sequsedK fp16 misaligned D72', { dtype: 'float16', misalign: 'base', D: 72, Sq: 60, Sk: 80, used: [13, 80] });
  add('varlen sequsedK causal lowerRight', { varlen: { q: [5, 130, 1, 40], k: [9, 120, 300, 60] }, used: [0, 100, 300, 7], causal: true, alignment: 'lowerRight' });
  return list;
}

describeWhereRunnable('flash-cuda backward case table', av.ok ? null : av.reason, () => describeCaseTable('flash-cuda', av.ok ? cases() : []));
