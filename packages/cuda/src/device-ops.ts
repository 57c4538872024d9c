// The DeviceRuntime's operations for one runtime's addon: allocation through the caching allocator,
// copies and fills on the device's current stream. Everything is checked here before the addon sees
// it; the addon re-checks ranges against its live blocks as a second line.
import { AttnInputError, type DeviceStorage } from '@attn/core';
import type { Devices } from './devices.js';
import { callNative, translateNativeError } from './errors.js';
import { type CaptureSlot, checkCaptureWork, refuseDuringCapture } from './graph.js';
import type { NativeAccess } from './native.js';
import { GpuStorage } from './storage.js';
import type { Streams } from './stream.js';
import { checkByteCount, checkByteValue, checkHostBytes, checkRange } from './validate.js';

export interface DeviceOps {
  allocate(bytes: number, index?: number): GpuStorage;
  /**
   * The address of the caching allocator's C table (attn/allocator_api.h), for kernel addons that
   * allocate their outputs and launch in one call. Blocks they get from it are adopted with adoptBlock.
   */
  allocatorApi(): bigint;
  /**
   * Takes ownership of a block of `bytes` bytes that a kernel addon got from allocatorApi's table on
   * device `index` (outside graph capture, where the table gives nothing): the storage frees it on
   * dispose() or by its finalizer, as one from allocate().
   */
  adoptBlock(pointer: bigint, bytes: number, index: number): GpuStorage;
  copyHostToDevice(dst: DeviceStorage, dstOffsetBytes: number, src: Uint8Array): void;
  copyDeviceToHost(src: DeviceStorage, srcOffsetBytes: number, dst: Uint8Array): void;
  /**
   * Like copyDeviceToHost without blocking the thread: the copy is queued now on the current stream
   * (after the work already queued there) and the promise resolves once the bytes are in `dst`. Do not
   * read or transfer `dst` before it settles.
   */
  copyDeviceToHostAsync(src: DeviceStorage, srcOffsetBytes: number, dst: Uint8Array): Promise<void>;
  copyDeviceToDevice(
    dst: DeviceStorage,
    dstOffsetBytes: number,
    src: DeviceStorage,
    srcOffsetBytes: number,
    bytes: number,
  ): void;
  fill(dst: DeviceStorage, dstOffsetBytes: number, bytes: number, byteValue: number): void;
  /** Waits for all work on the device. */
  synchronize(index?: number): void;
  /** True for live-or-disposed storage this runtime allocated (not another runtime's, not a copy). */
  isStorage(s: unknown): s is GpuStorage;
}

/** What a value is, without calling its own methods (which may throw). */
function describe(v: unknown): string {
  return typeof v === 'object' && v !== null ? Object.prototype.toString.call(v) : String(v);
}

const HOST_WRITE_INSTEAD = 'Create input tensors before the capture, and copy new values into them between replays.';
const HOST_READ_INSTEAD = 'Read results after the capture ends, or after a replay.';

export function createDeviceOps(
  native: NativeAccess,
  devices: Devices,
  streams: Streams,
  capture: CaptureSlot,
): DeviceOps {
  const { platform } = native;
  const isStorage = (s: unknown): s is GpuStorage => GpuStorage.is(s) && s.device.type === platform.type;

  /** A live buffer of this runtime; anything else (another runtime's storage, a disposed one) is refused. */
  function checkStorage(what: string, s: unknown): GpuStorage {
    if (!isStorage(s)) {
      throw new AttnInputError(
        'ATTN_DEVICE',
        `${what} must be device storage made by ${platform.packageName} (tensor(..., { device: '${platform.type}' })), got ${describe(s)}.`,
      );
    }
    void s.pointer; // throws DisposedError once disposed
    return s;
  }

  return {
    isStorage,

    allocate(bytes, index = 0) {
      const addon = native.require();
      devices.checkIndex(index);
      checkByteCount('allocate: bytes', bytes);
      const state = checkCaptureWork(capture, streams, index, 'allocating');
      const pointer = callNative(() => addon.allocate(index, bytes));
      const storage = new GpuStorage(addon, platform.type, index, pointer, bytes);
      state?.allocated.push(storage);
      return storage;
    },

    allocatorApi() {
      return callNative(() => native.require().allocatorApi());
    },

    adoptBlock(pointer, bytes, index) {
      return new GpuStorage(native.require(), platform.type, index, pointer, bytes);
    },

    copyHostToDevice(dst, dstOffsetBytes, src) {
      const addon = native.require();
      const d = checkStorage('copyHostToDevice: dst', dst);
      const bytes = checkHostBytes('copyHostToDevice: src', src);
      checkRange('copyHostToDevice destination', dstOffsetBytes, bytes.byteLength, d.bytes);
      if (bytes.byteLength === 0) return;
      refuseDuringCapture(
        capture,
        'Copying host data to the device (tensor(..., { device }), .to(device))',
        HOST_WRITE_INSTEAD,
      );
      callNative(() => addon.copyHostToDevice(d.device.index, d.pointer + BigInt(dstOffsetBytes), bytes));
    },

    copyDeviceToHost(src, srcOffsetBytes, dst) {
      const addon = native.require();
      const s = checkStorage('copyDeviceToHost: src', src);
      const bytes = checkHostBytes('copyDeviceToHost: dst', dst);
      checkRange('copyDeviceToHost source', srcOffsetBytes, bytes.byteLength, s.bytes);
      if (bytes.byteLength === 0) return;
      refuseDuringCapture(
        capture,
        "Reading device memory on the host (toFloat32Array, toFloat64Array, .to('cpu'))",
        HOST_READ_INSTEAD,
      );
      callNative(() => addon.copyDeviceToHost(s.device.index, bytes, s.pointer + BigInt(srcOffsetBytes)));
    },

    async copyDeviceToHostAsync(src, srcOffsetBytes, dst) {
      const addon = native.require();
      const s = checkStorage('copyDeviceToHostAsync: src', src);
      const bytes = checkHostBytes('copyDeviceToHostAsync: dst', dst);
      checkRange('copyDeviceToHostAsync source', srcOffsetBytes, bytes.byteLength, s.bytes);
      if (bytes.byteLength === 0) return;
      refuseDuringCapture(capture, 'Reading device memory on the host (copyDeviceToHostAsync)', HOST_READ_INSTEAD);
      const pending = callNative(() =>
        addon.copyDeviceToHostAsync(s.device.index, bytes, s.pointer + BigInt(srcOffsetBytes)),
      );
      try {
        await pending;
      } catch (e) {
        throw translateNativeError(e);
      }
    },

    copyDeviceToDevice(dst, dstOffsetBytes, src, srcOffsetBytes, bytes) {
      const addon = native.require();
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
      const state = checkCaptureWork(capture, streams, d.device.index, 'copyDeviceToDevice');
      if (state) {
        checkCaptureWork(capture, streams, s.device.index, 'copyDeviceToDevice');
        state.used.add(d);
        state.used.add(s);
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
    },

    fill(dst, dstOffsetBytes, bytes, byteValue) {
      const addon = native.require();
      const d = checkStorage('fill: dst', dst);
      checkRange('fill', dstOffsetBytes, bytes, d.bytes);
      const value = checkByteValue(byteValue);
      if (bytes === 0) return;
      checkCaptureWork(capture, streams, d.device.index, 'fill')?.used.add(d);
      callNative(() => addon.fill(d.device.index, d.pointer + BigInt(dstOffsetBytes), value, bytes));
    },

    synchronize(index = 0) {
      const addon = native.require();
      devices.checkIndex(index);
      refuseDuringCapture(capture, 'synchronize()', 'Synchronize after the capture ends.');
      callNative(() => addon.synchronize(index));
    },
  };
}
