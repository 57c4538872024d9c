// GPU: streams and events. The current stream is what kernels and copies use; events order work
// across streams and time it.
import { AttnInputError, DisposedError } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import { cuda } from './cuda-runtime.js';
import { callNative } from './errors.js';
import {
  allocate,
  copyDeviceToDevice,
  copyDeviceToHost,
  currentStream,
  Event,
  fill,
  setCurrentStream,
  Stream,
  withStream,
} from './index.js';

announceSkip('streams and events');

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
  return 'no error';
}

describe.skipIf(!gpu)('streams', () => {
  it('has a current stream per device that withStream and setCurrentStream change and restore', () => {
    const original = currentStream(0);
    expect(original).not.toBe(0n);
    expect(Stream.current(0).handle).toBe(original);
    const s = new Stream();
    expect(s.handle).not.toBe(original);
    expect(withStream(s, () => currentStream(0))).toBe(s.handle);
    expect(currentStream(0)).toBe(original);
    expect(() =>
      withStream(s, () => {
        throw new Error('inside');
      }),
    ).toThrow('inside');
    expect(currentStream(0)).toBe(original);
    setCurrentStream(s);
    expect(currentStream(0)).toBe(s.handle);
    setCurrentStream(null, 0);
    expect(currentStream(0)).toBe(original);
    // Disposing the current stream puts the default one back.
    setCurrentStream(s);
    s.dispose();
    expect(currentStream(0)).toBe(original);
  });

  it('disposes once; later use is DisposedError; wrapped runtime streams cannot be disposed', () => {
    const s = new Stream();
    s.synchronize();
    expect(s.query()).toBe(true);
    s.dispose();
    s.dispose();
    expect(() => s.handle).toThrow(DisposedError);
    expect(() => s.synchronize()).toThrow(DisposedError);
    const wrapped = Stream.current();
    expect(wrapped.owned).toBe(false);
    expect(() => wrapped.dispose()).toThrow(AttnInputError);
    const load = cuda.native.state().load;
    if (!load.ok) throw new Error('unreachable');
    const defaultStream = callNative(() => load.addon.defaultStream(0));
    expect(codeOf(() => callNative(() => load.addon.streamDestroy(defaultStream)))).toBe('ATTN_BAD_HANDLE');
    expect(codeOf(() => Stream.fromHandle(12345n))).toBe('ATTN_BAD_HANDLE');
    expect(codeOf(() => new Stream({ device: 64 }))).toBe('ATTN_DEVICE');
  });

  it('orders work across streams with an event', () => {
    const producer = new Stream();
    const consumer = new Stream();
    const src = allocate(32 * 1024 * 1024);
    const dst = allocate(32 * 1024 * 1024);
    try {
      withStream(producer, () => fill(src, 0, src.bytes, 0x5a));
      const ready = new Event({ timing: false }).record(producer);
      consumer.waitEvent(ready);
      withStream(consumer, () => copyDeviceToDevice(dst, 0, src, 0, src.bytes));
      consumer.synchronize();
      const out = new Uint8Array(src.bytes);
      copyDeviceToHost(dst, 0, out);
      expect(out.every((v) => v === 0x5a)).toBe(true);
      ready.dispose();
    } finally {
      src.dispose();
      dst.dispose();
      producer.dispose();
      consumer.dispose();
    }
  });
});

describe.skipIf(!gpu)('events', () => {
  it('time device work in milliseconds', () => {
    const a = allocate(256 * 1024 * 1024);
    const b = allocate(256 * 1024 * 1024);
    const start = new Event();
    const end = new Event();
    try {
      start.record();
      for (let k = 0; k < 4; k++) copyDeviceToDevice(b, 0, a, 0, a.bytes);
      end.record();
      const ms = start.elapsedMs(end);
      expect(end.query()).toBe(true);
      // 2 GiB of copy traffic: more than a microsecond, far less than ten seconds on any H100/H200.
      expect(ms).toBeGreaterThan(0.001);
      expect(ms).toBeLessThan(10_000);
      end.synchronize();
    } finally {
      start.dispose();
      end.dispose();
      a.dispose();
      b.dispose();
    }
  });

  it('refuses timing without timing events or before recording', () => {
    const plain = new Event({ timing: false });
    const timed = new Event();
    const other = new Event();
    try {
      expect(codeOf(() => timed.elapsedMs(other))).toBe('ATTN_EVENT_NOT_RECORDED');
      plain.record();
      timed.record();
      expect(codeOf(() => plain.elapsedMs(timed))).toBe('ATTN_EVENT_NO_TIMING');
      expect(codeOf(() => other.wait())).toBe('ATTN_EVENT_NOT_RECORDED');
    } finally {
      plain.dispose();
      timed.dispose();
      other.dispose();
    }
    plain.dispose();
    expect(() => plain.record()).toThrow(DisposedError);
  });
});
