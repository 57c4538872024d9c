// A flash-cuda varlen decode step captured into a CUDA graph and replayed: cuSeqlensQ/K and sequsedK
// live on the device, so each replay reads the lengths written there since (new data and new lengths
// by device copies, no recapture) and matches cpu-math on the same inputs. Replay count, the graph's
// invalidation on a disposed input, and no leak once graph and outputs are disposed. Skipped with the
// reason printed where there is no usable device.
import '@attn/cpu';
import { randn, sdpaVarlen, type Tensor, tensor, type VarlenOptions } from '@attn/core';
import { captureGraph, copyDeviceToDevice, type CudaStorage, memoryStats, synchronize } from '@attn/cuda';
import { expect, it } from 'vitest';
import { scaledMaxError as relErr } from '@attn/core/testing';
import { flashCudaBackend } from './index.js';
import { describeWhereRunnable } from '@attn/conformance';

const av = flashCudaBackend.availability();

const TOL = 3e-2; // bf16, relative to the largest reference element
const B = 4;
const HQ = 8;
const HK = 2;
const D = 128;
const TOTAL_K = 1200; // packed keys of all sequences; each replay may split them differently
const i32 = (xs: readonly number[], device: 'cpu' | 'cuda') => tensor([...xs], [xs.length], { dtype: 'int32', device });
const offsets = (lens: readonly number[]) => lens.reduce<number[]>((acc, n) => [...acc, acc[acc.length - 1]! + n], [0]);
const storage = (t: Tensor): CudaStorage => t.storage as CudaStorage;
const copyInto = (dst: Tensor, src: Tensor): void =>
  copyDeviceToDevice(storage(dst), 0, storage(src), 0, storage(src).bytes);

/** cpu-math on the same (rounded) inputs and lengths. */
function reference(q: Tensor, k: Tensor, v: Tensor, lensK: readonly number[], used: readonly number[]): Tensor {
  const opts: VarlenOptions = {
    cuSeqlensQ: i32(offsets(Array(B).fill(1)), 'cpu'),
    cuSeqlensK: i32(offsets(lensK), 'cpu'),
    maxSeqlenQ: 1,
    maxSeqlenK: Math.max(...lensK),
    sequsedK: i32(used, 'cpu'),
    enableGqa: true,
    backends: ['cpu-math'],
  };
  return sdpaVarlen(q.to('cpu'), k.to('cpu'), v.to('cpu'), opts).out;
}

describeWhereRunnable('flash-cuda varlen decode in a CUDA graph', av.ok ? null : av.reason, () => {
  it('replays with new data and new device-side lengths, matching cpu-math each time', () => {
    const o = { dtype: 'bfloat16' as const, device: 'cuda' as const };
    const q = randn([B, HQ, D], { ...o, seed: 1 });
    const k = randn([TOTAL_K, HK, D], { ...o, seed: 2 });
    const v = randn([TOTAL_K, HK, D], { ...o, seed: 3 });
    const cuQ = i32(offsets(Array(B).fill(1)), 'cuda');
    const lens0 = [300, 1, 599, 300];
    const used0 = [300, 0, 17, 211];
    const cuK = i32(offsets(lens0), 'cuda');
    const used = i32(used0, 'cuda');
    synchronize();
    const before = memoryStats();

    // maxSeqlenK bounds every replay's lengths: the captured grid and split plan are fixed.
    const opts: VarlenOptions = {
      cuSeqlensQ: cuQ,
      cuSeqlensK: cuK,
      maxSeqlenQ: 1,
      maxSeqlenK: TOTAL_K,
      sequsedK: used,
      enableGqa: true,
      backends: ['flash-cuda'],
    };
    const graph = captureGraph(() => sdpaVarlen(q, k, v, opts));
    expect(graph.result.backend).toBe('flash-cuda');
    graph.replay();
    expect(relErr(graph.result.out, reference(q, k, v, lens0, used0))).toBeLessThan(TOL);

    const steps: Array<[number[], number[], number]> = [
      [[1, 1000, 100, 99], [1, 1000, 0, 64], 11],
      [[1200, 0, 0, 0], [1111, 0, 0, 0], 21],
    ];
    for (const [lens, counts, seed] of steps) {
      const fresh = [
        randn([B, HQ, D], { ...o, seed }),
        randn([TOTAL_K, HK, D], { ...o, seed: seed + 1 }),
        randn([TOTAL_K, HK, D], { ...o, seed: seed + 2 }),
      ];
      const newK = i32(offsets(lens), 'cuda');
      const newUsed = i32(counts, 'cuda');
      [q, k, v].forEach((t, i) => copyInto(t, fresh[i]!));
      copyInto(cuK, newK);
      copyInto(used, newUsed);
      graph.replay();
      expect(relErr(graph.result.out, reference(q, k, v, lens, counts))).toBeLessThan(TOL);
      for (const t of [...fresh, newK, newUsed]) t.dispose();
    }
    expect(graph.replayCount).toBe(3);

    const live = memoryStats().allocatedBytes;
    used.dispose();
    const usedBytes = live - memoryStats().allocatedBytes; // its size class, allocated before the capture
    expect(() => graph.replay()).toThrow(expect.objectContaining({ code: 'ATTN_GRAPH_TENSOR_DISPOSED' }));
    graph.dispose();
    graph.result.out.dispose();
    graph.result.logsumexp.dispose();
    synchronize();
    const after = memoryStats();
    // Everything allocated since `before` (the outputs, the split-KV partials) is back.
    expect(after.allocatedBytes).toBe(before.allocatedBytes - usedBytes);
    expect(after.pendingFreeBlocks).toBe(before.pendingFreeBlocks);
    expect(after.activeBlocks).toBe(before.activeBlocks - 1);
    for (const t of [q, k, v, cuQ, cuK]) t.dispose();
  });
});
