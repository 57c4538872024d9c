// The caching allocator's controls: statistics, peak reset, releasing the cache, cross-stream use.
import { AttnInputError } from '@attn/core';
import { deviceCount } from './devices.js';
import { callNative } from './errors.js';
import type { MemoryStats } from './memory-stats.js';
import { nativeState, requireAddon } from './native.js';
import { CudaStorage } from './storage.js';
import type { Stream } from './stream.js';
import { checkDeviceIndex } from './validate.js';

export function memoryStats(device = 0): MemoryStats {
  const addon = requireAddon();
  checkDeviceIndex(device, deviceCount());
  return callNative(() => addon.memoryStats(device));
}

/** Peaks restart from the current values. */
export function resetPeakMemoryStats(device = 0): void {
  const addon = requireAddon();
  checkDeviceIndex(device, deviceCount());
  callNative(() => addon.resetPeakMemoryStats(device));
}

/**
 * Returns cached (freed) device memory to the driver, after waiting for the device, and frees idle
 * pinned staging buffers. `device` undefined: every device. Without a usable device nothing is
 * cached, so there is nothing to do.
 */
export function emptyCache(device?: number): void {
  if (!nativeState().availability.ok) return;
  const addon = requireAddon();
  if (device !== undefined) checkDeviceIndex(device, deviceCount());
  callNative(() => addon.emptyCache(device ?? -1));
}

/**
 * Declares that `storage` is also used by work on `stream` (other than the one it was allocated on):
 * when it is freed, its memory is reused only after that stream's work queued so far has finished.
 */
export function recordStream(storage: CudaStorage, stream: Stream): void {
  if (!CudaStorage.is(storage)) {
    throw new AttnInputError('ATTN_DEVICE', 'recordStream takes device storage made by @attn/cuda (tensor.storage).');
  }
  const addon = requireAddon();
  const pointer = storage.pointer;
  const handle = stream.handle;
  callNative(() => addon.recordStream(storage.device.index, pointer, handle));
}
