// GPU: the caching allocator. Reuse by size class, stream-ordered frees, statistics, releasing the
// cache, and out-of-memory as a typed error that leaves the device usable.
import { empty, OutOfMemoryError, tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import {
  allocate,
  copyDeviceToDevice,
  CudaOutOfMemoryError,
  emptyCache,
  memoryStats,
  recordStream,
  resetPeakMemoryStats,
  Stream,
  withStream,
} from './index.js';

announceSkip('caching allocator');

const MiB = 1 << 20;

describe.skipIf(!gpu)('caching allocator', () => {
  it('reuses a freed block for the next request of the same size class', () => {
    emptyCache();
    const before = memoryStats();
    const a = allocate(1000);
    const p = a.pointer;
    a.dispose();
    const b = allocate(1000);
    expect(b.pointer).toBe(p);
    b.dispose();
    const c = allocate(1010); // same 512-byte class (1024)
    expect(c.pointer).toBe(p);
    const d = allocate(1025); // next class: cannot take c's block, which is in use anyway
    expect(d.pointer).not.toBe(p);
    c.dispose();
    d.dispose();
    const after = memoryStats();
    expect(after.cacheHits - before.cacheHits).toBe(2);
    expect(after.deviceMallocs - before.deviceMallocs).toBe(2);
    expect(after.allocRequests - before.allocRequests).toBe(4);
    expect(after.freeRequests - before.freeRequests).toBe(4);
  });

  it('rounds requests to size classes: 512-byte steps below 1 MiB, four per octave above', () => {
    const cases: [number, number][] = [
      [1, 512],
      [3000, 3072],
      [MiB, MiB],
      [MiB + 1, 1.25 * MiB],
      [3 * MiB, 3 * MiB],
      [5 * MiB + 1, 6 * MiB],
      [100 * MiB, 112 * MiB],
    ];
    for (const [bytes, cls] of cases) {
      const base = memoryStats().allocatedBytes;
      const s = allocate(bytes);
      expect(memoryStats().allocatedBytes - base, `${bytes} bytes`).toBe(cls);
      s.dispose();
    }
  });

  it('keeps allocated, requested, reserved and peak statistics', () => {
    emptyCache();
    resetPeakMemoryStats();
    const base = memoryStats();
    expect(base.cachedBlocks).toBe(0);
    const s = allocate(3000);
    let st = memoryStats();
    expect(st.allocatedBytes - base.allocatedBytes).toBe(3072);
    expect(st.requestedBytes - base.requestedBytes).toBe(3000);
    expect(st.activeBlocks - base.activeBlocks).toBe(1);
    expect(st.reservedBytes - base.reservedBytes).toBe(3072);
    expect(st.peakAllocatedBytes).toBeGreaterThanOrEqual(st.allocatedBytes);
    s.dispose();
    st = memoryStats();
    expect(st.allocatedBytes).toBe(base.allocatedBytes);
    expect(st.reservedBytes - base.reservedBytes).toBe(3072); // cached, not returned
    expect(st.cachedBlocks).toBe(1);
    expect(st.peakAllocatedBytes - base.allocatedBytes).toBeGreaterThanOrEqual(3072);
    emptyCache();
    st = memoryStats();
    expect(st.reservedBytes).toBe(base.reservedBytes);
    expect(st.cachedBlocks).toBe(0);
    resetPeakMemoryStats();
    expect(memoryStats().peakAllocatedBytes).toBe(memoryStats().allocatedBytes);
  });

  it('reuses blocks only on the stream that freed them (stream-ordered frees)', () => {
    const side = new Stream();
    try {
      const a = withStream(side, () => allocate(4096));
      const p = a.pointer;
      a.dispose();
      const other = allocate(4096); // the default stream: must not get the side stream's block
      expect(other.pointer).not.toBe(p);
      const again = withStream(side, () => allocate(4096));
      expect(again.pointer).toBe(p);
      again.dispose();
      other.dispose();
      const reserved = memoryStats().reservedBytes;
      side.dispose(); // its cached block moves to the default stream; nothing leaks
      expect(memoryStats().reservedBytes).toBe(reserved);
    } finally {
      side.dispose();
    }
  });

  it('waits for streams recorded with recordStream before reusing a block', () => {
    const busy = new Stream();
    const big = allocate(1024 * MiB);
    const big2 = allocate(1024 * MiB);
    try {
      const a = allocate(8192);
      const p = a.pointer;
      // Queue a long stretch of work on `busy`, then declare that `a` is used there too.
      withStream(busy, () => {
        for (let k = 0; k < 8; k++) copyDeviceToDevice(big2, 0, big, 0, big.bytes);
      });
      // big and big2 were allocated on the default stream and are used on `busy`: say so, as callers must.
      recordStream(big, busy);
      recordStream(big2, busy);
      recordStream(a, busy);
      const base = memoryStats().pendingFreeBlocks;
      a.dispose();
      const st = memoryStats();
      const reuse = allocate(8192);
      const stillBusy = !busy.query();
      if (stillBusy) {
        expect(st.pendingFreeBlocks).toBe(base + 1);
        expect(reuse.pointer).not.toBe(p);
      } else {
        console.log('[@attn/cuda] the busy stream finished before the check; pending-free assertions not exercised');
      }
      busy.synchronize();
      expect(memoryStats().pendingFreeBlocks).toBe(base);
      const after = allocate(8192);
      if (stillBusy) expect(after.pointer).toBe(p); // back in the pool once the stream finished
      after.dispose();
      reuse.dispose();
    } finally {
      big.dispose();
      big2.dispose();
      busy.dispose();
    }
  });

  it('turns an impossible request (1 PiB) into CudaOutOfMemoryError and stays usable', () => {
    const before = memoryStats();
    let err: unknown;
    try {
      allocate(2 ** 50);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CudaOutOfMemoryError);
    expect(err).toBeInstanceOf(OutOfMemoryError);
    const oom = err as CudaOutOfMemoryError;
    expect(oom.code).toBe('ATTN_OUT_OF_MEMORY');
    expect(oom.requestedBytes).toBe(2 ** 50);
    expect(oom.message).toMatch(
      /^CUDA out of memory on device 0: tried to allocate 1\.00 PiB \(1125899906842624 bytes/,
    );
    expect(oom.message).toMatch(/free of .* reserved/);
    expect(oom.deviceTotalBytes).toBeGreaterThan(0);
    expect(oom.stats.allocatedBytes).toBe(before.allocatedBytes);
    const after = memoryStats();
    expect(after.ooms - before.ooms).toBe(1);
    expect(after.cacheFlushes - before.cacheFlushes).toBe(1);
    // No sticky error: the device still computes and copies.
    const t = tensor([1, 2, 3], [3], { device: 'cuda' });
    expect([...t.toFloat32Array()]).toEqual([1, 2, 3]);
    t.dispose();
    // Through core's factory the same error reaches the caller.
    expect(() => empty([2 ** 30, 2 ** 20], { device: 'cuda' })).toThrow(OutOfMemoryError);
  });
});
