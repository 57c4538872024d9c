// GPU: core tensors on 'cuda' through this runtime. Every dtype round-trips bit-exactly, strided
// views read back in logical order, copies and fills land where asked, and bad ranges are errors.
import { AttnInputError, DisposedError, tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import { checkRoundTrip, checkViews, DTYPES } from '../test/tensor-cases.js';
import { callNative } from './errors.js';
import { cuda } from './cuda-runtime.js';
import {
  allocate,
  copyDeviceToDevice,
  copyDeviceToHost,
  copyDeviceToHostAsync,
  copyHostToDevice,
  cudaRuntime,
  fill,
  synchronize,
} from './index.js';

announceSkip('runtime round trips');

describe.skipIf(!gpu)('round trips through the device', () => {
  for (const dtype of DTYPES) {
    it(`${dtype}: to('cuda') and back keeps every bit; toFloat64Array matches the CPU`, () => {
      checkRoundTrip(dtype);
    });
    it(`${dtype}: strided views (transpose, permute, narrow, expand) read back in logical order`, () => {
      checkViews(dtype);
    });
  }

  it('handles empty tensors', () => {
    const t = tensor([], [0, 4], { device: 'cuda' });
    expect(t.toFloat32Array()).toEqual(new Float32Array(0));
    t.dispose();
  });
});

describe.skipIf(!gpu)('copies and fills', () => {
  it('copies host-to-device asynchronously without keeping the host buffer (staged and unstaged sizes)', () => {
    for (const bytes of [1, 4097, 3 << 20, 80 << 20]) {
      const src = new Uint8Array(bytes).map((_, i) => (i * 31 + 7) & 0xff);
      const want = src.slice();
      const s = allocate(bytes);
      copyHostToDevice(s, 0, src);
      src.fill(0); // the copy must already be independent of src
      const back = new Uint8Array(bytes);
      copyDeviceToHost(s, 0, back);
      expect(
        back.every((v, i) => v === want[i]),
        `${bytes} bytes`,
      ).toBe(true);
      s.dispose();
    }
  });

  it('honours offsets, device-to-device copies and fills', () => {
    const a = allocate(64);
    const b = allocate(64);
    fill(a, 0, 64, 0x11);
    copyHostToDevice(a, 8, new Uint8Array([1, 2, 3, 4]));
    fill(b, 0, 64, 0xee);
    copyDeviceToDevice(b, 30, a, 6, 8);
    synchronize();
    const out = new Uint8Array(64);
    copyDeviceToHost(b, 0, out);
    const want = new Uint8Array(64).fill(0xee);
    want.set([0x11, 0x11, 1, 2, 3, 4, 0x11, 0x11], 30);
    expect(out).toEqual(want);
    const part = new Uint8Array(4);
    copyDeviceToHost(a, 8, part);
    expect(part).toEqual(new Uint8Array([1, 2, 3, 4]));
    a.dispose();
    b.dispose();
  });

  it('rejects ranges outside a buffer before any device work, and the addon re-checks', () => {
    const s = allocate(16);
    const code = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        expect(e).toBeInstanceOf(AttnInputError);
        return (e as AttnInputError).code;
      }
      return 'no error';
    };
    expect(code(() => copyHostToDevice(s, 8, new Uint8Array(9)))).toBe('ATTN_OUT_OF_BOUNDS');
    expect(code(() => copyDeviceToHost(s, 17, new Uint8Array(0)))).toBe('ATTN_OUT_OF_BOUNDS');
    expect(code(() => fill(s, 0, 17, 0))).toBe('ATTN_OUT_OF_BOUNDS');
    expect(code(() => fill(s, 0, 4, 256))).toBe('ATTN_BAD_VALUE');
    expect(code(() => copyDeviceToDevice(s, 0, s, 4, 8))).toBe('ATTN_OVERLAP');
    expect(
      code(() =>
        copyHostToDevice(
          { kind: 'device', device: { type: 'cuda', index: 0 }, pointer: 1n, bytes: 8, disposed: false, dispose() {} },
          0,
          new Uint8Array(1),
        ),
      ),
    ).toBe('ATTN_DEVICE');
    // Below the TS checks: the addon refuses what the allocator did not hand out.
    const load = cuda.native.state().load;
    if (!load.ok) throw new Error('unreachable: gpu implies a loaded addon');
    const addon = load.addon;
    expect(code(() => callNative(() => addon.copyHostToDevice(0, s.pointer + 8n, new Uint8Array(9))))).toBe(
      'ATTN_OUT_OF_BOUNDS',
    );
    expect(code(() => callNative(() => addon.copyDeviceToHost(0, new Uint8Array(4), 0x1000n)))).toBe(
      'ATTN_OUT_OF_BOUNDS',
    );
    expect(code(() => callNative(() => addon.fill(0, s.pointer - 1n, 0, 2)))).toBe('ATTN_OUT_OF_BOUNDS');
    expect(code(() => callNative(() => addon.free(0, s.pointer + 4n)))).toBe('ATTN_BAD_POINTER');
    expect(code(() => callNative(() => addon.allocate(99, 16)))).toBe('ATTN_DEVICE');
    expect(code(() => callNative(() => addon.streamSynchronize(0xdeadn)))).toBe('ATTN_BAD_HANDLE');
    expect(code(() => callNative(() => addon.eventQuery(0xbeefn)))).toBe('ATTN_BAD_HANDLE');
    expect(code(() => callNative(() => (addon.allocate as (...a: unknown[]) => unknown)(0, -1)))).toBe(
      'ATTN_BAD_ARGUMENT',
    );
    s.dispose();
    expect(() => copyHostToDevice(s, 0, new Uint8Array(1))).toThrow(DisposedError);
  });

  it("is what core's registry hands out for 'cuda'", () => {
    expect(cudaRuntime.deviceCount()).toBeGreaterThan(0);
    expect(cudaRuntime.properties(0).type).toBe('cuda');
  });
});

describe.skipIf(!gpu)('asynchronous reads', () => {
  it('copies device to host without blocking, ordered after earlier work on the stream', async () => {
    for (const bytes of [3, 5000, 2 << 20, 100 << 20]) {
      const s = allocate(bytes);
      fill(s, 0, bytes, 0x3c); // queued before the read: the read must see it
      copyHostToDevice(s, 0, new Uint8Array([1, 2, 3]));
      const out = new Uint8Array(bytes);
      const pending = copyDeviceToHostAsync(s, 0, out);
      expect(pending).toBeInstanceOf(Promise);
      s.dispose(); // stream-ordered free: the queued read still sees the data
      await pending;
      expect([...out.subarray(0, 3)]).toEqual([1, 2, 3]);
      expect(
        out.subarray(3).every((v) => v === 0x3c),
        `${bytes} bytes`,
      ).toBe(true);
    }
  });

  it('runs many reads at once, each into its own array', async () => {
    const s = allocate(4096);
    const pattern = new Uint8Array(4096).map((_, i) => i & 0xff);
    copyHostToDevice(s, 0, pattern);
    const outs = Array.from({ length: 16 }, () => new Uint8Array(256));
    await Promise.all(outs.map((o, k) => copyDeviceToHostAsync(s, k * 256, o)));
    outs.forEach((o, k) => expect(o).toEqual(pattern.subarray(k * 256, (k + 1) * 256)));
    s.dispose();
  });

  it('rejects bad ranges and disposed storage', async () => {
    const s = allocate(16);
    await expect(copyDeviceToHostAsync(s, 8, new Uint8Array(9))).rejects.toThrow(AttnInputError);
    s.dispose();
    await expect(copyDeviceToHostAsync(s, 0, new Uint8Array(1))).rejects.toThrow(DisposedError);
  });
});
