// Device memory behind a tensor: one block of a runtime's caching allocator. dispose() frees it
// (stream-ordered, so work already queued on it finishes first); a FinalizationRegistry frees it if
// the owner never does; after dispose the pointer is gone and every use throws DisposedError.
// One class for both runtimes: device.type says whose block it is, and the block keeps the addon
// that allocated it, so it is freed by that addon even if another runtime is registered meanwhile.
import { type Device, type DeviceStorage, DisposedError } from '@attn/core';
import type { NativeBinding } from './binding.js';
import { callNative } from './errors.js';
import { gpuPlatform, type GpuType } from './platform.js';

interface HeldBlock {
  readonly addon: NativeBinding;
  readonly type: GpuType;
  readonly device: number;
  readonly pointer: bigint;
  readonly bytes: number;
}

function freeBlock(held: HeldBlock): void {
  callNative(() => held.addon.free(held.device, held.pointer));
}

// Runs on the main thread some time after a storage became unreachable. It cannot throw to anyone,
// so a failure (a device already in an error state) is reported as a process warning.
const finalizer = new FinalizationRegistry<HeldBlock>((held) => {
  try {
    freeBlock(held);
  } catch (e) {
    process.emitWarning(
      `${gpuPlatform(held.type).packageName}: freeing an undisposed ${held.bytes}-byte buffer on ${held.type}:${held.device} failed: ${e instanceof Error ? e.message : String(e)}`,
      { code: 'ATTN_FINALIZER_FREE_FAILED' },
    );
  }
});

export class GpuStorage implements DeviceStorage {
  readonly kind = 'device' as const;
  readonly device: Device;
  readonly bytes: number;
  #pointer: bigint;
  #disposed = false;
  readonly #addon: NativeBinding;

  /** Takes ownership of a block the addon allocated (pointer 0n for 0 bytes). */
  constructor(addon: NativeBinding, type: GpuType, index: number, pointer: bigint, bytes: number) {
    this.#addon = addon;
    this.device = Object.freeze({ type, index });
    this.#pointer = pointer;
    this.bytes = bytes;
    if (pointer !== 0n) finalizer.register(this, { addon, type, device: index, pointer, bytes }, this);
  }

  get pointer(): bigint {
    if (this.#disposed)
      throw new DisposedError(`${this.device.type}:${this.device.index} storage (${this.bytes} bytes)`);
    return this.#pointer;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Frees the memory; later uses throw DisposedError. Twice is a no-op. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const pointer = this.#pointer;
    this.#pointer = 0n;
    if (pointer === 0n) return;
    finalizer.unregister(this);
    freeBlock({
      addon: this.#addon,
      type: this.device.type as GpuType,
      device: this.device.index,
      pointer,
      bytes: this.bytes,
    });
  }

  toString(): string {
    return `GpuStorage(${this.device.type}:${this.device.index}, ${this.bytes} bytes${this.#disposed ? ', disposed' : ''})`;
  }

  /** True only for objects this class constructed (a prototype copy has no private state). */
  static is(s: unknown): s is GpuStorage {
    return typeof s === 'object' && s !== null && #pointer in s;
  }
}
