// The TS layer over a simulated addon (test/fake-addon.ts), so it runs on every machine: core's
// tensors on 'cuda' reach the addon with the right pointers, offsets and argument order; storage,
// stream and event lifetimes behave; native error codes become core's errors. CUDA itself is
// covered by the GPU suites, not here.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AttnInputError, DisposedError, tensor } from '@attn/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type FakeAddon, makeFakeAddon } from '../test/fake-addon.js';
import { checkRoundTrip, checkViews, DTYPES } from '../test/tensor-cases.js';
import * as cuda from './index.js';
import { cuda as cudaRuntime } from './cuda-runtime.js';

let fake: FakeAddon;
beforeAll(() => {
  fake = makeFakeAddon(2);
  cudaRuntime.native.setStateForTesting({
    load: { ok: true, addon: fake, path: '(simulated)', origin: 'local build' },
    availability: { ok: true },
    deviceCount: 2,
  });
});

describe('tensors on a simulated device', () => {
  for (const dtype of DTYPES) {
    it(`${dtype}: round trip and strided views`, () => {
      checkRoundTrip(dtype);
      checkViews(dtype);
      expect(fake.blocks.size).toBe(0); // every temporary was disposed
    });
  }

  it('passes byte offsets through as pointer arithmetic', () => {
    const s = cuda.allocate(64, 1);
    expect(s.device).toEqual({ type: 'cuda', index: 1 });
    cuda.fill(s, 0, 64, 0);
    cuda.copyHostToDevice(s, 10, new Uint8Array([7, 8, 9]));
    const mem = fake.blocks.get(s.pointer)!;
    expect([...mem.subarray(9, 14)]).toEqual([0, 7, 8, 9, 0]);
    const t = cuda.allocate(64, 1);
    cuda.copyDeviceToDevice(t, 1, s, 10, 3);
    const out = new Uint8Array(5);
    cuda.copyDeviceToHost(t, 0, out);
    expect([...out.subarray(1, 4)]).toEqual([7, 8, 9]);
    s.dispose();
    t.dispose();
  });

  it('reads asynchronously', async () => {
    const s = cuda.allocate(8);
    cuda.copyHostToDevice(s, 0, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    const out = new Uint8Array(4);
    await cuda.copyDeviceToHostAsync(s, 4, out);
    expect([...out]).toEqual([5, 6, 7, 8]);
    s.dispose();
  });
});

describe('storage lifetime on a simulated device', () => {
  it('adopts a block a kernel addon allocated: dispose frees it once', () => {
    // The addon's allocate stands in for the C table (attn/allocator_api.h): same allocator, same blocks.
    const pointer = fake.allocate(1, 96);
    const s = cuda.adoptBlock(pointer, 96, 1);
    expect(s.device).toEqual({ type: 'cuda', index: 1 });
    expect(s.pointer).toBe(pointer);
    expect(cuda.isCudaStorage(s)).toBe(true);
    s.dispose();
    expect(fake.blocks.has(pointer)).toBe(false);
    s.dispose(); // twice is a no-op
    expect(() => s.pointer).toThrow(DisposedError);
  });

  it('frees once, then every use is DisposedError', () => {
    const s = cuda.allocate(16);
    const ptr = s.pointer;
    expect(fake.blocks.has(ptr)).toBe(true);
    s.dispose();
    s.dispose();
    expect(fake.blocks.has(ptr)).toBe(false);
    expect(() => s.pointer).toThrow(DisposedError);
    expect(() => cuda.fill(s, 0, 1, 0)).toThrow(DisposedError);
  });

  it('frees undisposed storage from the finalizer', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const before = fake.blocks.size;
    (() => {
      for (let k = 0; k < 8; k++) cuda.allocate(100);
    })();
    expect(fake.blocks.size).toBe(before + 8);
    for (let round = 0; round < 100 && fake.blocks.size > before; round++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(fake.blocks.size).toBe(before);
  });

  it('refuses storage it did not make with a typed error', () => {
    const s = cuda.allocate(16);
    const copy = Object.create(s) as cuda.CudaStorage; // a CudaStorage by prototype, without its state
    expect(cuda.isCudaStorage(copy)).toBe(false);
    expect(() => cuda.recordStream(copy, cuda.Stream.current())).toThrow(
      expect.objectContaining({ code: 'ATTN_DEVICE' }),
    );
    expect(() => cuda.fill(copy, 0, 1, 0)).toThrow(AttnInputError);
    expect(() => cuda.deviceProperties(2)).toThrow(AttnInputError);
    expect(cuda.deviceProperties(1)).toMatchObject({ type: 'cuda', index: 1, arch: 'sm_90' });
    s.dispose();
  });
});

describe('streams and events on a simulated device', () => {
  it('switches and restores the current stream', () => {
    const original = cuda.currentStream(0);
    const s = new cuda.Stream();
    expect(cuda.withStream(s, () => cuda.currentStream(0))).toBe(s.handle);
    expect(cuda.currentStream(0)).toBe(original);
    expect(() => new cuda.Stream({ device: 2 })).toThrow(AttnInputError);
    const other = new cuda.Stream({ device: 1 });
    cuda.setCurrentStream(other);
    expect(cuda.currentStream(1)).toBe(other.handle);
    expect(cuda.currentStream(0)).toBe(original);
    cuda.setCurrentStream(null, 1);
    other.dispose();
    s.dispose();
    expect(() => s.handle).toThrow(DisposedError);
    expect(() => cuda.Stream.current().dispose()).toThrow(AttnInputError);
  });

  it('records, waits and times events; codes for misuse', () => {
    const a = new cuda.Event();
    const b = new cuda.Event();
    expect(() => a.elapsedMs(b)).toThrow(AttnInputError); // the addon's code, mapped by callNative
    expect(() => a.elapsedMs(b)).toThrow(expect.objectContaining({ code: 'ATTN_EVENT_NOT_RECORDED' }));
    a.record();
    b.record(cuda.Stream.current(0));
    expect(a.elapsedMs(b)).toBe(0.5);
    b.wait(new cuda.Stream());
    const c = new cuda.Event({ device: 1 });
    expect(() => c.record(cuda.Stream.current(0))).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE_MISMATCH' }));
    a.dispose();
    a.dispose();
    expect(() => a.record()).toThrow(DisposedError);
    b.dispose();
    c.dispose();
  });

  it("registers with core so tensor(..., { device: 'cuda:1' }) lands on device 1", () => {
    const t = tensor([1, 2, 3], [3], { device: 'cuda:1' });
    expect(t.device).toEqual({ type: 'cuda', index: 1 });
    expect([...t.toFloat32Array()]).toEqual([1, 2, 3]);
    t.dispose();
    expect(cuda.memoryStats(1).activeBlocks).toBe(fake.blocks.size);
  });
});
