// Moving tensor bytes between the host and a device through its registered DeviceRuntime.
// Core has no kernels of its own: strided reads copy the spanned bytes and gather on the host.
import type { Device } from './device.js';
import { requireDeviceRuntime } from './device-registry.js';
import { DTYPE_BYTES, type DType, type HostArray } from './dtype.js';
import { allocHostArray } from './host-array.js';
import { maxReachableIndex, shapeNumel } from './layout.js';
import type { DeviceStorage } from './storage.js';

function bytesOf(arr: HostArray): Uint8Array {
  return new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
}

/** Allocates device memory for a contiguous host array and copies it there. */
export function uploadHostArray(data: HostArray, device: Device): DeviceStorage {
  const runtime = requireDeviceRuntime(device);
  const storage = runtime.allocate(data.byteLength, device.index);
  try {
    if (data.byteLength > 0) runtime.copyHostToDevice(storage, 0, bytesOf(data));
  } catch (e) {
    storage.dispose();
    throw e;
  }
  return storage;
}

/** Allocates device memory for n elements without initializing it. */
export function allocateDevice(dtype: DType, n: number, device: Device): DeviceStorage {
  return requireDeviceRuntime(device).allocate(n * DTYPE_BYTES[dtype], device.index);
}

/**
 * Copies to the host every element a strided view can reach. Returns a host array and the index
 * of the view's offset inside it: element (i...) is at base + sum(i_k * strides[k]).
 */
export function downloadSpan(
  storage: DeviceStorage,
  dtype: DType,
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
): { data: HostArray; base: number } {
  const runtime = requireDeviceRuntime(storage.device);
  if (shapeNumel(shape) === 0) return { data: allocHostArray(dtype, 0), base: 0 };
  const span = maxReachableIndex(shape, strides, offset) - offset + 1;
  const data = allocHostArray(dtype, span);
  runtime.copyDeviceToHost(storage, offset * DTYPE_BYTES[dtype], bytesOf(data));
  return { data, base: 0 };
}

/** Copies `bytes` bytes between device buffers on one runtime. */
export function copyOnDevice(
  dst: DeviceStorage,
  dstByte: number,
  src: DeviceStorage,
  srcByte: number,
  bytes: number,
): void {
  requireDeviceRuntime(src.device).copyDeviceToDevice(dst, dstByte, src, srcByte, bytes);
}
