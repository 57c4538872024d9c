// Device paths of Tensor and the factories, on a host-backed fake runtime.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { registerDeviceRuntime, requireDeviceRuntime, unregisterDeviceRuntime } from './device-registry.js';
import { DeviceError, DisposedError, OutOfMemoryError } from './errors.js';
import { empty, randn, tensor, zeros } from './factory.js';
import { type FakeDeviceRuntime, makeFakeDeviceRuntime } from './fake-device.js';
import { isolateRegistry } from './testing.js';

const iota = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('device tensors', () => {
  let runtime: FakeDeviceRuntime;
  let restore: (() => void) | null = null;

  beforeEach(() => {
    runtime = makeFakeDeviceRuntime({ devices: [{}, { major: 8, minor: 6 }] });
    restore = isolateRegistry({ keepDeviceRuntimes: false });
    registerDeviceRuntime(runtime);
  });

  afterEach(() => restore?.());

  it('uploads on creation and reads back in logical order', () => {
    const t = tensor(iota(6), [2, 3], { device: 'cuda' });
    expect(t.device).toEqual({ type: 'cuda', index: 0 });
    expect(runtime.counts.h2d).toBe(1);
    expect([...t.toFloat64Array()]).toEqual(iota(6));
    expect(() => t.hostData()).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE' }));
    expect(typeof t.dataPointer()).toBe('bigint');
  });

  it('reads strided device views by copying the spanned bytes', () => {
    const t = tensor(iota(24), [2, 3, 4], { device: 'cuda:1', dtype: 'float16' });
    const view = t.permute([2, 0, 1]).narrow(0, 1, 2);
    const host = tensor(iota(24), [2, 3, 4], { dtype: 'float16' }).permute([2, 0, 1]).narrow(0, 1, 2);
    expect([...view.toFloat32Array()]).toEqual([...host.toFloat32Array()]);
    expect(view.dataPointer()).toBe(t.dataPointer() + 2n);
  });

  it('contiguous() on the device uses device copies for few runs', () => {
    const t = tensor(iota(24), [2, 3, 4], { device: 'cuda' });
    const d2dBefore = runtime.counts.d2d;
    const c = t.transpose(0, 1).contiguous(); // runs of 4 contiguous elements: 6 copies
    expect(runtime.counts.d2d - d2dBefore).toBe(6);
    expect(c.device.type).toBe('cuda');
    expect([...c.toFloat64Array()]).toEqual([...tensor(iota(24), [2, 3, 4]).transpose(0, 1).toFloat64Array()]);
    const many = tensor(iota(2000), [1000, 2], { device: 'cuda' }).transpose(0, 1).contiguous();
    expect([...many.toFloat64Array()]).toEqual([...tensor(iota(2000), [1000, 2]).transpose(0, 1).toFloat64Array()]);
  });

  it('moves between host and device and between devices', () => {
    const host = tensor(iota(6), [2, 3]).transpose(0, 1);
    const dev = host.to('cuda');
    expect(dev.isContiguous()).toBe(true);
    expect([...dev.to('cpu').toFloat64Array()]).toEqual([...host.toFloat64Array()]);
    const other = dev.to('cuda:1');
    expect(other.device.index).toBe(1);
    expect([...other.toFloat64Array()]).toEqual([...host.toFloat64Array()]);
    expect(dev.to({ type: 'cuda', index: 0 })).toBe(dev);
    expect([...dev.toDType('bfloat16').toFloat64Array()]).toEqual([...host.toFloat64Array()]);
    expect(dev.toDType('bfloat16').device.type).toBe('cuda');
  });

  it('zeros fills on the device; randn matches the host draw', () => {
    const e = empty([4], { device: 'cuda' });
    runtime.fill(e.storage as never, 0, 16, 0xff);
    const z = zeros([4], { device: 'cuda' });
    expect([...z.toFloat64Array()]).toEqual([0, 0, 0, 0]);
    expect(randn([5], { seed: 3, device: 'cuda' }).toFloat64Array()).toEqual(randn([5], { seed: 3 }).toFloat64Array());
  });

  it('dispose frees device memory once, for all views; later use is a DisposedError', () => {
    const t = tensor(iota(4), [2, 2], { device: 'cuda' });
    const view = t.transpose(0, 1);
    expect(runtime.live()).toBe(1);
    view.dispose();
    expect(runtime.live()).toBe(0);
    expect(t.disposed).toBe(true);
    expect(() => t.toFloat32Array()).toThrow(DisposedError);
    expect(() => t.dataPointer()).toThrow(DisposedError);
    t.dispose();
    expect(runtime.live()).toBe(0);
  });

  it('reports a missing device index, runtime or availability with what to do', () => {
    expect(() => tensor([1], [1], { device: 'cuda:2' })).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE' }));
    expect(() => zeros([1], { device: 'rocm' })).toThrow(DeviceError);
    expect(() => zeros([1], { device: 'rocm' })).toThrow(/install @attn\/rocm/);
    unregisterDeviceRuntime('cuda');
    registerDeviceRuntime(makeFakeDeviceRuntime({ unavailable: 'libcudart.so not found' }));
    expect(() => zeros([1], { device: 'cuda' })).toThrow(expect.objectContaining({ code: 'ATTN_DEVICE_UNAVAILABLE' }));
    expect(() => requireDeviceRuntime({ type: 'cuda', index: 0 })).toThrow(/libcudart/);
  });

  it('passes allocation failures through as OutOfMemoryError', () => {
    unregisterDeviceRuntime('cuda');
    registerDeviceRuntime(makeFakeDeviceRuntime({ maxAllocationBytes: 8 }));
    expect(() => zeros([16], { device: 'cuda' })).toThrow(OutOfMemoryError);
  });
});
