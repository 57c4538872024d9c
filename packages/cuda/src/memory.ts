// The caching allocator's controls of one runtime: statistics, peak reset, releasing the cache,
// cross-stream use.
import { AttnInputError } from '@attn/core';
import type { Devices } from './devices.js';
import { callNative } from './errors.js';
import type { MemoryStats } from './memory-stats.js';
import type { NativeAccess } from './native.js';
import type { GpuStorage } from './storage.js';
import { checkSameRuntime } from './runtime-handle.js';
import type { GpuStream } from './stream.js';

export interface MemoryControls {
  memoryStats(device?: number): MemoryStats;
  /** Peaks restart from the current values. */
  resetPeakMemoryStats(device?: number): void;
  /**
   * Returns cached (freed) device memory to the driver, after waiting for the device, and frees idle
   * pinned staging buffers. `device` undefined: every device. Without a usable device nothing is
   * cached, so there is nothing to do.
   */
  emptyCache(device?: number): void;
  /**
   * Declares that `storage` is also used by work on `stream` (other than the one it was allocated on):
   * when it is freed, its memory is reused only after that stream's work queued so far has finished.
   */
  recordStream(storage: GpuStorage, stream: GpuStream): void;
}

export function createMemoryControls(
  native: NativeAccess,
  devices: Devices,
  isStorage: (s: unknown) => s is GpuStorage,
): MemoryControls {
  const { platform } = native;
  return {
    memoryStats(device = 0) {
      const addon = native.require();
      devices.checkIndex(device);
      return callNative(() => addon.memoryStats(device));
    },
    resetPeakMemoryStats(device = 0) {
      const addon = native.require();
      devices.checkIndex(device);
      callNative(() => addon.resetPeakMemoryStats(device));
    },
    emptyCache(device) {
      if (!native.state().availability.ok) return;
      const addon = native.require();
      if (device !== undefined) devices.checkIndex(device);
      callNative(() => addon.emptyCache(device ?? -1));
    },
    recordStream(storage, stream) {
      if (!isStorage(storage)) {
        throw new AttnInputError(
          'ATTN_DEVICE',
          `recordStream takes device storage made by ${platform.packageName} (tensor.storage).`,
        );
      }
      const addon = native.require();
      const pointer = storage.pointer;
      const handle = checkSameRuntime(platform.type, 'recordStream: stream', stream).handle;
      callNative(() => addon.recordStream(storage.device.index, pointer, handle));
    },
  };
}
