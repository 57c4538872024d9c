// Storage behind a tensor, and the interface a device package implements to register a device.
import type { Device, DeviceProperties, DeviceType } from './device.js';

/**
 * Memory on a GPU. Implemented by @attn/cuda and @attn/rocm.
 * `dispose()` frees it (twice is a no-op); a finalizer frees it if the user never does;
 * any use after dispose throws DisposedError (never a crash).
 */
export interface DeviceStorage {
  readonly kind: 'device';
  readonly device: Device;
  /** Device address of byte 0. Throws DisposedError once disposed. */
  readonly pointer: bigint;
  readonly bytes: number;
  readonly disposed: boolean;
  dispose(): void;
}

export type Availability = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * A device runtime ('cuda', 'rocm'). Registered with core by importing the device package, so that
 * `tensor(..., { device: 'cuda' })`, `t.to('cuda')` and `toFloat32Array()` work for its tensors.
 * All copies are ordered on the runtime's current stream of that device; copyDeviceToHost returns
 * once the bytes are on the host.
 */
export interface DeviceRuntime {
  readonly type: Exclude<DeviceType, 'cpu'>;
  /** Loads the native addon lazily; a failure is remembered and returned as the reason. */
  availability(): Availability;
  deviceCount(): number;
  properties(index: number): DeviceProperties;
  allocate(bytes: number, index: number): DeviceStorage;
  copyHostToDevice(dst: DeviceStorage, dstOffsetBytes: number, src: Uint8Array): void;
  copyDeviceToHost(src: DeviceStorage, srcOffsetBytes: number, dst: Uint8Array): void;
  copyDeviceToDevice(
    dst: DeviceStorage,
    dstOffsetBytes: number,
    src: DeviceStorage,
    srcOffsetBytes: number,
    bytes: number,
  ): void;
  /** Fills bytes with a repeated byte value (used to poison outputs in tests). */
  fill(dst: DeviceStorage, dstOffsetBytes: number, bytes: number, byteValue: number): void;
  synchronize(index: number): void;
  /**
   * Graph capture (optional: a runtime without graphs leaves it out). True while work issued now on
   * device `index` is recorded into a graph instead of running: validation must not read device
   * memory then (a synchronizing read would break the capture), and what a call reads is reported
   * through noteCaptureUse. Called on every call on the device, so it must be cheap.
   */
  capturing?(index: number): boolean;
  /** While capturing: storages a captured call reads or writes, so the graph can refuse to replay once one is disposed. */
  noteCaptureUse?(index: number, storages: readonly DeviceStorage[]): void;
}
