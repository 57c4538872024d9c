// GPU: device storage lifetime. dispose() frees once, use after dispose is DisposedError, and the
// finalizer frees buffers nobody disposed.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DisposedError, tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import { allocate, copyDeviceToHost, CudaStorage, fill, memoryStats } from './index.js';

announceSkip('device storage');

// A gc() without --expose-gc on the command line: the flag is read when a context is created.
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe.skipIf(!gpu)('device storage', () => {
  it('frees on dispose; a second dispose is a no-op', () => {
    const base = memoryStats();
    const s = allocate(256);
    expect(s).toBeInstanceOf(CudaStorage);
    expect(s.kind).toBe('device');
    expect(s.bytes).toBe(256);
    expect(s.pointer).toBeGreaterThan(0n);
    expect(memoryStats().activeBlocks).toBe(base.activeBlocks + 1);
    s.dispose();
    expect(s.disposed).toBe(true);
    expect(memoryStats().activeBlocks).toBe(base.activeBlocks);
    const frees = memoryStats().freeRequests;
    s.dispose();
    expect(memoryStats().freeRequests).toBe(frees);
  });

  it('throws DisposedError on any use after dispose', () => {
    const s = allocate(64);
    s.dispose();
    expect(() => s.pointer).toThrow(DisposedError);
    expect(() => fill(s, 0, 8, 0)).toThrow(DisposedError);
    expect(() => copyDeviceToHost(s, 0, new Uint8Array(8))).toThrow(DisposedError);
    const t = tensor([1, 2, 3, 4], [2, 2], { device: 'cuda' });
    const view = t.transpose(0, 1);
    t.dispose();
    expect(t.disposed).toBe(true);
    expect(view.disposed).toBe(true);
    expect(() => view.toFloat32Array()).toThrow(DisposedError);
    expect(() => t.to('cpu')).toThrow(DisposedError);
    t.dispose();
  });

  it('gives zero-byte buffers a null pointer and nothing to free', () => {
    const before = memoryStats();
    const s = allocate(0);
    expect(s.pointer).toBe(0n);
    s.dispose();
    expect(memoryStats().allocRequests).toBe(before.allocRequests);
  });

  it('frees buffers that were never disposed once they are garbage collected', async () => {
    const gc = exposeGc();
    const base = memoryStats().activeBlocks;
    (() => {
      for (let k = 0; k < 32; k++) allocate(4096 + k);
    })();
    expect(memoryStats().activeBlocks).toBe(base + 32);
    for (let round = 0; round < 100 && memoryStats().activeBlocks > base; round++) {
      gc();
      await new Promise((r) => setTimeout(r, 10)); // finalizers run as tasks after a collection
    }
    expect(memoryStats().activeBlocks).toBe(base);
  });
});
