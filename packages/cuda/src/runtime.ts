// The DeviceRuntime that core uses for 'cuda' tensors: allocation through the caching allocator,
// copies and fills on the device's current stream. Registered with core by index.ts.
import { AttnInputError, type DeviceRuntime, type DeviceStorage } from '@attn/core';
import { deviceCount, deviceProperties } from './devices.js';
import { callNative, translateNativeError } from './errors.js';
import { nativeState, requireAddon } from './native.js';
import { CudaStorage } from './storage.js';
import { checkByteCount, checkByteValue, checkDeviceIndex, checkHostBytes, checkRange } from './validate.js';

/** What a value is, without calling its own methods (which may throw). */
function describe(v: unknown): string {
  return typeof v === 'object' && v !== null ? Object.prototype.toString.call(v) : String(v);
}

/** A live buffer of this runtime; anything else (another runtime's storage, a disposed one) is refused. */
function checkStorage(what: string, s: unknown): CudaStorage {
  if (!CudaStorage.is(s)) {
    throw new AttnInputError(
      'ATTN_DEVICE',
      `${what} must be device storage made by @attn/cuda (tensor(..., { device: 'cuda' })), got ${describe(s)}.`,
    );
  }
  void s.pointer; // throws DisposedError once disposed
  return s;
}

export function allocate(bytes: number, index = 0): CudaStorage {
  const addon = requireAddon();
  checkDeviceIndex(index, deviceCount());
  checkByteCount('allocate: bytes', bytes);
  const pointer = callNative(() => addon.allocate(index, bytes));
  return new CudaStorage(addon, index, pointer, bytes);
}

export function copyHostToDevice(dst: DeviceStorage, dstOffsetBytes: number, src: Uint8Array): void {
  const addon = requireAddon();
  const d = checkStorage('copyHostToDevice: dst', dst);
  const bytes = checkHostBytes('copyHostToDevice: src', src);
  checkRange('copyHostToDevice destination', dstOffsetBytes, bytes.byteLength, d.bytes);
  if (bytes.byteLength === 0) return;
  callNative(() => addon.copyHostToDevice(d.device.index, d.pointer + BigInt(dstOffsetBytes), bytes));
}

export function copyDeviceToHost(src: DeviceStorage, srcOffsetBytes: number, dst: Uint8Array): void {
  const addon = requireAddon();
  const s = checkStorage('copyDeviceToHost: src', src);
  const bytes = checkHostBytes('copyDeviceToHost: dst', dst);
  checkRange('copyDeviceToHost source', srcOffsetBytes, bytes.byteLength, s.bytes);
  if (bytes.byteLength === 0) return;
  callNative(() => addon.copyDeviceToHost(s.device.index, bytes, s.pointer + BigInt(srcOffsetBytes)));
}

/**
 * Like copyDeviceToHost without blocking the thread: the copy is queued now on the current stream
 * (after the work already queued there) and the promise resolves once the bytes are in `dst`. Do not
 * read or transfer `dst` before it settles.
 */
export async function copyDeviceToHostAsync(src: DeviceStorage, srcOffsetBytes: number, dst: Uint8Array): Promise<void> {
  const addon = requireAddon();
  const s = checkStorage('copyDeviceToHostAsync: src', src);
  const bytes = checkHostBytes('copyDeviceToHostAsync: dst', dst);
  checkRange('copyDeviceToHostAsync source', srcOffsetBytes, bytes.byteLength, s.bytes);
  if (bytes.byteLength === 0) return;
  const pending = callNative(() => addon.copyDeviceToHostAsync(s.device.index, bytes, s.pointer + BigInt(srcOffsetBytes)));
  try {
    await pending;
  } catch (e) {
    throw translateNativeError(e);
  }
}

export function copyDeviceToDevice(
  dst: DeviceStorage,
  dstOffsetBytes: number,
  src: DeviceStorage,
  srcOffsetBytes: number,
  bytes: number,
): void {
  const addon = requireAddon();
  const d = checkStorage('copyDeviceToDevice: dst', dst);
  const s = checkStorage('copyDeviceToDevice: src', src);
  checkRange('copyDeviceToDevice destination', dstOffsetBytes, bytes, d.bytes);
  checkRange('copyDeviceToDevice source', srcOffsetBytes, bytes, s.bytes);
  if (bytes === 0) return;
  if (d === s && dstOffsetBytes !== srcOffsetBytes && Math.abs(dstOffsetBytes - srcOffsetBytes) < bytes) {
    throw new AttnInputError(
      'ATTN_OVERLAP',
      'copyDeviceToDevice: source and destination ranges overlap in one buffer; copy through a temporary buffer.',
    );
  }
  callNative(() =>
    addon.copyDeviceToDevice(
      d.device.index,
      d.pointer + BigInt(dstOffsetBytes),
      s.device.index,
      s.pointer + BigInt(srcOffsetBytes),
      bytes,
    ),
  );
}

export function fill(dst: DeviceStorage, dstOffsetBytes: number, bytes: number, byteValue: number): void {
  const addon = requireAddon();
  const d = checkStorage('fill: dst', dst);
  checkRange('fill', dstOffsetBytes, bytes, d.bytes);
  const value = checkByteValue(byteValue);
  if (bytes === 0) return;
  callNative(() => addon.fill(d.device.index, d.pointer + BigInt(dstOffsetBytes), value, bytes));
}

/** Waits for all work on the device. */
export function synchronize(index = 0): void {
  const addon = requireAddon();
  checkDeviceIndex(index, deviceCount());
  callNative(() => addon.synchronize(index));
}

export const cudaRuntime: DeviceRuntime = Object.freeze({
  type: 'cuda' as const,
  availability: () => nativeState().availability,
  deviceCount,
  properties: (index: number) => deviceProperties(index),
  allocate,
  copyHostToDevice,
  copyDeviceToHost,
  copyDeviceToDevice,
  fill,
  synchronize,
});
