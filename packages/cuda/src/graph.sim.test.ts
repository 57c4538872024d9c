// captureGraph's TS logic over the simulated addon (test/fake-addon.ts): what it tracks, what it
// refuses during a capture and with which code, and that core's validation reads no device memory
// while capturing. CUDA's own capture and replay are covered by graph.gpu.test.ts on a GPU host.
import {
  AttnInputError,
  emptyOutput,
  explainVarlen,
  GRAPH_CODES,
  GraphError,
  normalizeVarlenParams,
  OUTPUT_NAMES,
  registerBackend,
  sdpa,
  tensor,
  unregisterBackend,
  zeros,
  type Backend,
  type Tensor,
} from '@attn/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAddon, makeFakeAddon } from '../test/fake-addon.js';
import * as cuda from './index.js';
import { cuda as cudaRuntime } from './cuda-runtime.js';

let fake: FakeAddon;
const seen: string[] = [];
function expectGraphError(fn: () => unknown, code: (typeof GRAPH_CODES)[number]): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(GraphError);
  expect((caught as GraphError).code).toBe(code);
  seen.push(code);
}

// A backend that only allocates its outputs: enough to see what a captured sdpa call tracks.
const allocOnly: Backend = {
  name: 'graph-test-alloc',
  deviceType: 'cuda',
  defaultPriority: 1000,
  description: 'allocates outputs, computes nothing (graph tests)',
  availability: () => ({ ok: true }),
  rules: [],
  forward: (p) => ({
    out: emptyOutput(OUTPUT_NAMES.out, [p.batch, p.headsQ, p.seqQ, p.headDimV], { dtype: p.dtype, device: p.device }),
    logsumexp: emptyOutput(OUTPUT_NAMES.logsumexp, [p.batch, p.headsQ, p.seqQ], { dtype: 'float32', device: p.device }),
  }),
};

beforeAll(() => {
  fake = makeFakeAddon(2);
  cudaRuntime.native.setStateForTesting({
    load: { ok: true, addon: fake, path: '(simulated)', origin: 'local build' },
    availability: { ok: true },
    deviceCount: 2,
  });
  registerBackend(allocOnly);
});
afterAll(() => {
  unregisterBackend(allocOnly.name);
});

const dev = (shape: number[], dtype: 'float32' | 'int32' = 'float32', values?: number[]): Tensor =>
  values ? tensor(values, shape, { dtype, device: 'cuda' }) : zeros(shape, { dtype, device: 'cuda' });

describe('captureGraph on a simulated device', () => {
  it('captures, replays on the current or a given stream, counts replays, and disposes once', () => {
    const x = dev([4]);
    const graph = cuda.captureGraph(() => {
      const y = dev([4]);
      cuda.copyDeviceToDevice(y.storage as cuda.CudaStorage, 0, x.storage as cuda.CudaStorage, 0, 16);
      return y;
    });
    expect(fake.capturing()).toBeNull();
    expect(graph.device).toBe(0);
    expect(graph.trackedStorages).toBe(2); // x (read) and y (written, allocated in the capture)
    expect(graph.nodeCount).toBe(2); // zeros' fill and the copy
    graph.replay();
    graph.replay(new cuda.Stream());
    expect(graph.replayCount).toBe(2);
    expect([...fake.graphs.values()].map((g) => g.launches)).toContain(2);
    graph.dispose();
    graph.dispose();
    expect(fake.graphs.size).toBe(0);
    expectGraphError(() => graph.replay(), 'ATTN_GRAPH_DISPOSED');
    graph.result.dispose();
    x.dispose();
  });

  it('refuses replay once a tensor it reads or writes is disposed; scratch disposed inside does not count', () => {
    const x = dev([8]);
    const graph = cuda.captureGraph(() => {
      const scratch = dev([8]);
      cuda.copyDeviceToDevice(scratch.storage as cuda.CudaStorage, 0, x.storage as cuda.CudaStorage, 0, 32);
      scratch.dispose();
      return dev([2]);
    });
    graph.replay();
    x.dispose();
    expectGraphError(() => graph.replay(), 'ATTN_GRAPH_TENSOR_DISPOSED');
    graph.dispose();
    graph.result.dispose();

    const out = cuda.captureGraph(() => dev([2]));
    out.result.dispose();
    expectGraphError(() => out.replay(), 'ATTN_GRAPH_TENSOR_DISPOSED');
    out.dispose();
  });

  it("tracks a captured sdpa call's inputs (reported by core) and outputs (allocated in the capture)", () => {
    const q = dev([1, 2, 3, 8]);
    const k = dev([1, 2, 5, 8]);
    const v = dev([1, 2, 5, 8]);
    const graph = cuda.captureGraph(() => sdpa(q, k, v, { backends: [allocOnly.name] }));
    expect(graph.trackedStorages).toBe(4); // q, k, v, out (sdpa frees the logsumexp it drops, inside the capture)
    graph.replay();
    k.dispose();
    expectGraphError(() => graph.replay(), 'ATTN_GRAPH_TENSOR_DISPOSED');
    graph.dispose();
    for (const t of [q, v, graph.result]) t.dispose();
  });

  it('refuses host reads and writes, syncs and other streams during capture, with the capture still usable', () => {
    const x = dev([4], 'float32', [1, 2, 3, 4]);
    const graph = cuda.captureGraph(() => {
      expectGraphError(() => x.toFloat64Array(), 'ATTN_GRAPH_CAPTURE_UNSUPPORTED');
      expectGraphError(() => dev([2], 'float32', [1, 2]), 'ATTN_GRAPH_CAPTURE_UNSUPPORTED');
      expectGraphError(() => cuda.synchronize(0), 'ATTN_GRAPH_CAPTURE_UNSUPPORTED');
      const side = new cuda.Stream();
      expectGraphError(() => cuda.withStream(side, () => dev([2])), 'ATTN_GRAPH_CAPTURE_UNSUPPORTED');
      expectGraphError(() => zeros([2], { device: 'cuda:1' }), 'ATTN_GRAPH_DEVICE');
      expectGraphError(() => cuda.captureGraph(() => 0), 'ATTN_GRAPH_NESTED');
      return dev([4]);
    });
    expect([...x.toFloat64Array()]).toEqual([1, 2, 3, 4]); // after the capture, reads work again
    graph.replay();
    expectGraphError(() => graph.replay(cuda.Stream.current(1)), 'ATTN_GRAPH_DEVICE');
    graph.dispose();
    graph.result.dispose();
    x.dispose();
  });

  it('ends the capture when fn throws: the error propagates, no graph is kept, the next capture works', () => {
    const before = fake.blocks.size;
    const boom = new Error('boom');
    expect(() =>
      cuda.captureGraph(() => {
        dev([16]); // left to the finalizer by the failed function
        throw boom;
      }),
    ).toThrow(boom);
    expect(fake.capturing()).toBeNull();
    expect(fake.graphs.size).toBe(0);
    expectGraphError(() => cuda.captureGraph(() => dev([1]).toFloat32Array()), 'ATTN_GRAPH_CAPTURE_UNSUPPORTED');
    expectGraphError(() => cuda.captureGraph(async () => 1), 'ATTN_GRAPH_ASYNC');
    expect(fake.capturing()).toBeNull();
    const g = cuda.captureGraph(() => 7);
    expect(g.result).toBe(7);
    g.dispose();
    expect(fake.blocks.size).toBeGreaterThanOrEqual(before);
  });

  it('reports a capture the runtime invalidated as ATTN_GRAPH_CAPTURE_FAILED, with the CUDA error as cause', () => {
    fake.failNextGraphEnd();
    let caught: unknown;
    try {
      cuda.captureGraph(() => dev([1]));
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({
      code: 'ATTN_GRAPH_CAPTURE_FAILED',
      cause: { gpuError: 'cudaErrorStreamCaptureInvalidated' },
    });
    seen.push('ATTN_GRAPH_CAPTURE_FAILED');
    expect(fake.capturing()).toBeNull();
    cuda.captureGraph(() => 0).dispose(); // the next capture works
  });
});

describe("core's validation during capture", () => {
  const call = () => {
    const q = dev([7, 4, 8]);
    const k = dev([9, 2, 8]);
    const v = dev([9, 2, 8]);
    const cuQ = dev([3], 'int32', [0, 3, 7]);
    const cuK = dev([3], 'int32', [0, 4, 9]);
    const used = dev([2], 'int32', [2, 5]);
    return {
      q,
      k,
      v,
      opts: { cuSeqlensQ: cuQ, cuSeqlensK: cuK, maxSeqlenQ: 4, maxSeqlenK: 5, sequsedK: used, enableGqa: true },
    };
  };

  it('reads no index values while capturing: host copies are null and params.capturing says so', () => {
    const { q, k, v, opts } = call();
    const eager = normalizeVarlenParams(q, k, v, opts);
    expect(eager.capturing).toBe(false);
    expect([...eager.varlen!.seqlensK!]).toEqual([0, 4, 9]);
    const graph = cuda.captureGraph(() => normalizeVarlenParams(q, k, v, opts));
    const p = graph.result;
    expect(p.capturing).toBe(true);
    expect(p.varlen!.seqlensQ).toBeNull();
    expect(p.varlen!.seqlensK).toBeNull();
    expect(p.sequsedK!.lengths).toBeNull();
    expect(p.sequsedK!.tensor).toBe(opts.sequsedK);
    graph.dispose();
  });

  it('still checks shapes, dtypes and devices while capturing', () => {
    const { q, k, v, opts } = call();
    const badDtype = dev([3], 'float32');
    const g = cuda.captureGraph(() => {
      expect(() => normalizeVarlenParams(q, k, v, { ...opts, cuSeqlensK: badDtype })).toThrow(AttnInputError);
      expect(() => normalizeVarlenParams(q, k, v, { ...opts, sequsedK: dev([3], 'int32') })).toThrow(
        expect.objectContaining({ code: 'ATTN_SEQUSED_K' }),
      );
      expect(() => normalizeVarlenParams(q, k, v, { ...opts, maxSeqlenQ: -1 })).toThrow(
        expect.objectContaining({ code: 'ATTN_VARLEN' }),
      );
    });
    g.dispose();
  });

  it('cuda-math, which needs the values on the host, declines such calls with the reason', () => {
    const { q, k, v, opts } = call();
    const g = cuda.captureGraph(() => explainVarlen(q, k, v, { ...opts, backends: ['cuda-math'] }));
    const entry = g.result.candidates.find((c) => c.backend === 'cuda-math')!;
    expect(entry.reasons.map((r) => r.rule)).toContain('indexValuesOnHost');
    g.dispose();
  });

  it('covers every graph code', () => {
    expect(new Set(seen)).toEqual(new Set(GRAPH_CODES));
  });
});
