// GPU: CUDA graphs. Capture and replay of device copies, fills and a cuda-math attention call; replay
// after new input data; the graph-private pool (captured outputs and scratch stay reserved while the
// graph lives, and come back when it is disposed); every invalidation rule with its code, the stream
// usable afterwards; a failing function; no leak.
import '@attn/cpu';
import { GraphError, randn, sdpa, tensor, type Tensor, zeros } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import {
  allocate,
  captureGraph,
  copyDeviceToDevice,
  type CudaStorage,
  deviceCount,
  emptyCache,
  Event,
  fill,
  memoryStats,
  Stream,
  synchronize,
  withStream,
} from './index.js';

announceSkip('CUDA graphs');

const storage = (t: Tensor): CudaStorage => t.storage as CudaStorage;
/** Copies all of `src` into `dst` (fresh contiguous tensors of one size) on the current stream. */
const copyInto = (dst: Tensor, src: Tensor): void =>
  copyDeviceToDevice(storage(dst), 0, storage(src), 0, storage(src).bytes);
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GraphError);
    return (e as GraphError).code;
  }
  return undefined;
};

describe.skipIf(!gpu)('CUDA graphs', () => {
  it('replays captured copies and fills; each replay reads the inputs as they are then', () => {
    const x = tensor([1, 2, 3, 4], [4], { device: 'cuda' });
    const graph = captureGraph(() => {
      const y = zeros([8], { device: 'cuda' });
      copyDeviceToDevice(storage(y), 16, storage(x), 0, 16); // y[4..8] = x
      fill(storage(y), 4, 4, 0x3f); // y[1]: bytes 0x3f3f3f3f
      return y;
    });
    const y = graph.result;
    expect(graph.nodeCount).toBe(3); // zeros' memset, the copy, the fill
    // Nothing ran during the capture (zeros() itself is a captured memset): the first replay writes y.
    graph.replay();
    const first = [...y.toFloat64Array()];
    expect(first.slice(4)).toEqual([1, 2, 3, 4]);
    expect([first[0], first[2], first[3]]).toEqual([0, 0, 0]);
    expect(first[1]).toBeCloseTo(0.7470588, 5); // 0x3f3f3f3f as float32
    copyInto(x, tensor([5, 6, 7, 8], [4], { device: 'cuda' }));
    graph.replay();
    graph.replay(new Stream());
    synchronize();
    expect([...y.toFloat64Array()].slice(4)).toEqual([5, 6, 7, 8]);
    expect(graph.replayCount).toBe(3);
    graph.dispose();
    y.dispose();
    x.dispose();
  });

  it('replays a cuda-math attention call with new inputs and matches the eager call', () => {
    const o = { dtype: 'float32' as const, device: 'cuda' as const };
    const [q, k, v] = [
      randn([2, 4, 17, 8], { ...o, seed: 1 }),
      randn([2, 4, 33, 8], { ...o, seed: 2 }),
      randn([2, 4, 33, 8], { ...o, seed: 3 }),
    ];
    const graph = captureGraph(() => sdpa(q, k, v, { isCausal: true, backends: ['cuda-math'] }));
    for (const seed of [10, 20]) {
      const fresh = [
        randn([2, 4, 17, 8], { ...o, seed }),
        randn([2, 4, 33, 8], { ...o, seed: seed + 1 }),
        randn([2, 4, 33, 8], { ...o, seed: seed + 2 }),
      ];
      fresh.forEach((t, i) => copyInto([q, k, v][i]!, t));
      graph.replay();
      const eager = sdpa(q, k, v, { isCausal: true, backends: ['cuda-math'] });
      expect([...graph.result.toFloat64Array()]).toEqual([...eager.toFloat64Array()]);
      for (const t of [...fresh, eager]) t.dispose();
    }
    graph.dispose();
    for (const t of [q, k, v, graph.result]) t.dispose();
  });

  it("keeps the graph's outputs and scratch reserved while it lives, and returns them on dispose", () => {
    synchronize();
    emptyCache();
    const before = memoryStats();
    let scratchPointer = 0n;
    const graph = captureGraph(() => {
      const scratch = allocate(1 << 20);
      scratchPointer = scratch.pointer;
      fill(scratch, 0, 1 << 20, 1);
      scratch.dispose(); // captured work wrote it: it stays the graph's
      const out = allocate(4096);
      fill(out, 0, 4096, 2);
      return out;
    });
    graph.replay();
    const eager = allocate(1 << 20); // same size class as the scratch: must not get its block
    expect(eager.pointer).not.toBe(scratchPointer);
    eager.dispose();
    const out = graph.result;
    const outPointer = out.pointer;
    out.dispose(); // the graph's output: back to its pool, not to the cache others allocate from
    const again = allocate(4096);
    expect(again.pointer).not.toBe(outPointer);
    expect(codeOf(() => graph.replay())).toBe('ATTN_GRAPH_TENSOR_DISPOSED');
    again.dispose();
    graph.dispose();
    const after = memoryStats();
    expect(after.allocatedBytes).toBe(before.allocatedBytes);
    expect(after.activeBlocks).toBe(before.activeBlocks);
    expect(after.pendingFreeBlocks).toBe(before.pendingFreeBlocks);
    emptyCache(); // the released pool is ordinary cache now: every byte goes back to the driver
    expect(memoryStats().reservedBytes).toBe(before.reservedBytes);
  });

  it('refuses what cannot be captured with a code, and the capture and stream stay usable', () => {
    const x = tensor([1, 2, 3], [3], { device: 'cuda' });
    const ev = new Event();
    ev.record();
    const side = new Stream();
    const codes: Array<string | undefined> = [];
    const graph = captureGraph(() => {
      codes.push(codeOf(() => x.toFloat64Array()));
      codes.push(codeOf(() => tensor([1], [1], { device: 'cuda' })));
      codes.push(codeOf(() => synchronize()));
      codes.push(codeOf(() => ev.synchronize()));
      codes.push(codeOf(() => emptyCache()));
      codes.push(codeOf(() => withStream(side, () => zeros([2], { device: 'cuda' }))));
      codes.push(codeOf(() => captureGraph(() => 0)));
      if (deviceCount() > 1) codes.push(codeOf(() => zeros([1], { device: 'cuda:1' })));
      const y = zeros([3], { device: 'cuda' });
      copyDeviceToDevice(storage(y), 0, storage(x), 0, 12);
      return y;
    });
    expect(codes.slice(0, 7)).toEqual([
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      'ATTN_GRAPH_NESTED',
    ]);
    if (deviceCount() > 1) {
      expect(codes[7]).toBe('ATTN_GRAPH_DEVICE');
      expect(codeOf(() => graph.replay(Stream.current(1)))).toBe('ATTN_GRAPH_DEVICE');
    }
    graph.replay();
    expect([...graph.result.toFloat64Array()]).toEqual([1, 2, 3]);
    expect(codeOf(() => captureGraph(async () => 1))).toBe('ATTN_GRAPH_ASYNC');
    graph.dispose();
    expect(codeOf(() => graph.replay())).toBe('ATTN_GRAPH_DISPOSED');
    const g2 = captureGraph(() => zeros([1], { device: 'cuda' }));
    x.dispose();
    g2.replay(); // does not read x
    g2.dispose();
    g2.result.dispose();
    graph.result.dispose();
    ev.dispose();
    side.dispose();
  });

  it('ends the capture when fn throws: the error propagates, nothing leaks, the stream works', () => {
    synchronize();
    const before = memoryStats();
    const boom = new Error('boom');
    let leaked: Tensor | null = null;
    expect(() =>
      captureGraph(() => {
        leaked = zeros([1000], { device: 'cuda' });
        throw boom;
      }),
    ).toThrow(boom);
    (leaked as Tensor | null)?.dispose();
    const x = tensor([4, 5], [2], { device: 'cuda' });
    expect([...x.toFloat64Array()]).toEqual([4, 5]); // the stream runs eager work again
    x.dispose();
    synchronize();
    const after = memoryStats();
    expect(after.allocatedBytes).toBe(before.allocatedBytes);
    expect(after.activeBlocks).toBe(before.activeBlocks);
    expect(after.pendingFreeBlocks).toBe(before.pendingFreeBlocks);
  });
});
