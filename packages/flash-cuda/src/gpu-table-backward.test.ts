// flash-cuda's backward over its own case table, through the conformance harness (dq, dk, dv
// against cpu-math's float64 backward with the accuracy rule and its FlashAttention-form allowance,
// poisoned gradients, bitwise reproducibility of the deterministic mode): the head-dim buckets, odd
// sizes, every feature in both alignments, strided and misaligned inputs, varlen and sequsedK.
import '@attn/cpu';
import {
  describeCaseTable,
  describeWhereRunnable,
  headDimGrid,
  type Short,
  type TableCase,
  tableCase as spec,
} from '@attn/conformance';

import { sharedCases } from './gpu-table-shared.js';
import { flashCudaBackend } from './index.js';

const av = flashCudaBackend.availability();

function cases(): TableCase[] {
  const list: TableCase[] = headDimGrid().map((c) => ({ ...c, name: `bwd ${c.name}` }));
  const add = (name: string, c: Short) => list.push(spec(`bwd ${name}`, c));
  sharedCases(add);
  add('long queries sq3000 sk64', { Sq: 3000, Sk: 64, B: 1, Hq: 2 });
  add('mqa 4/1 causal D128', { Hq: 4, Hk: 1, D: 128, causal: true });
  add('gqa 6/2 D256 window', { Hq: 6, Hk: 2, D: 256, Sq: 90, Sk: 150, window: [30, 5] });
  add('dropout D256 softcap', { D: 256, Sq: 70, Sk: 90, dropoutP: 0.2, softcap: 10 });
  add('deterministic', { Sq: 300, Sk: 300, deterministic: true });
  add('deterministic causal gqa D128', { Hq: 4, Hk: 2, D: 128, Sq: 257, Sk: 257, deterministic: true, causal: true });
  add('deterministic D256 dropout alibi', {
    D: 256,
    Sq: 100,
    Sk: 120,
    alibi: 'perHead',
    deterministic: true,
    dropoutP: 0.1,
  });
  add('deterministic fp16 D192 window lowerRight', {
    dtype: 'float16',
    D: 192,
    Sq: 90,
    Sk: 200,
    deterministic: true,
    window: [20, 0],
    alignment: 'lowerRight',
  });
  add('varlen deterministic alibi softcap', {
    D: 128,
    alibi: 'perHead',
    varlen: { q: [40, 7], k: [33, 90] },
    deterministic: true,
    softcap: 4,
  });
  // sequsedK: rows using all, some and none of their keys (the dK/dV of the rest must come out 0).
  add('sequsedK', { B: 3, Sq: 130, Sk: 300, used: [300, 0, 77] });
  add('sequsedK causal lowerRight gqa D128', {
    B: 3,
    Hq: 4,
    Hk: 2,
    D: 128,
    Sq: 100,
    Sk: 260,
    used: [1, 259, 0],
    causal: true,
    alignment: 'lowerRight',
  });
  add('sequsedK window alibi dropout lowerRight', {
    B: 2,
    Sq: 90,
    Sk: 200,
    alibi: 'perBatchHead',
    used: [150, 33],
    window: [20, 5],
    alignment: 'lowerRight',
    dropoutP: 0.2,
  });
  add('sequsedK deterministic causal D256', {
    B: 2,
    D: 256,
    Sq: 70,
    Sk: 150,
    used: [0, 100],
    deterministic: true,
    causal: true,
  });
  add('sequsedK fp16 misaligned D72', { dtype: 'float16', misalign: 'base', D: 72, Sq: 60, Sk: 80, used: [13, 80] });
  add('varlen sequsedK causal lowerRight', {
    varlen: { q: [5, 130, 1, 40], k: [9, 120, 300, 60] },
    used: [0, 100, 300, 7],
    causal: true,
    alignment: 'lowerRight',
  });
  return list;
}

describeWhereRunnable('flash-cuda backward case table', av.ok ? null : av.reason, () =>
  describeCaseTable('flash-cuda', av.ok ? cases() : []),
);
