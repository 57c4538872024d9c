// Events: markers in a stream's work, for waiting across streams and for timing on the device.
import { DisposedError } from '@attn/core';
import { deviceCount } from './devices.js';
import { callNative } from './errors.js';
import { requireAddon } from './native.js';
import { currentStream, type Stream } from './stream.js';
import { checkDeviceIndex } from './validate.js';

export interface EventOptions {
  /** Device index; default 0. */
  readonly device?: number;
  /** Whether elapsedMs() can use it; default true. Without timing, recording is cheaper. */
  readonly timing?: boolean;
}

const eventFinalizer = new FinalizationRegistry<bigint>((handle) => {
  try {
    callNative(() => requireAddon().eventDestroy(handle));
  } catch (e) {
    process.emitWarning(`@attn/cuda: destroying an undisposed event failed: ${e instanceof Error ? e.message : String(e)}`, {
      code: 'ATTN_FINALIZER_FREE_FAILED',
    });
  }
});

export class Event {
  readonly device: number;
  readonly timing: boolean;
  #handle: bigint;
  #disposed = false;

  constructor(options: EventOptions = {}) {
    const addon = requireAddon();
    const device = checkDeviceIndex(options.device ?? 0, deviceCount());
    const timing = options.timing ?? true;
    this.device = device;
    this.timing = timing;
    this.#handle = callNative(() => addon.eventCreate(device, timing));
    eventFinalizer.register(this, this.#handle, this);
  }

  get handle(): bigint {
    if (this.#disposed) throw new DisposedError(`event on cuda:${this.device}`);
    return this.#handle;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Captures the work queued so far on `stream` (default: the device's current stream). */
  record(stream?: Stream): this {
    const handle = this.handle;
    const streamHandle = stream ? stream.handle : currentStream(this.device);
    callNative(() => requireAddon().eventRecord(handle, streamHandle));
    return this;
  }

  /** Waits until the captured work has finished. */
  synchronize(): void {
    const handle = this.handle;
    callNative(() => requireAddon().eventSynchronize(handle));
  }

  /** True when the captured work has finished. */
  query(): boolean {
    const handle = this.handle;
    return callNative(() => requireAddon().eventQuery(handle));
  }

  /** Milliseconds of device time from this event to `end`; waits for both. Both need timing. */
  elapsedMs(end: Event): number {
    const start = this.handle;
    const stop = end.handle;
    return callNative(() => requireAddon().eventElapsedMs(start, stop));
  }

  /** Makes later work on `stream` (default: the current stream of this event's device) wait for it. */
  wait(stream?: Stream): void {
    const handle = this.handle;
    const streamHandle = stream ? stream.handle : currentStream(this.device);
    callNative(() => requireAddon().streamWaitEvent(streamHandle, handle));
  }

  /** Releases the event; twice is a no-op. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    eventFinalizer.unregister(this);
    const handle = this.#handle;
    callNative(() => requireAddon().eventDestroy(handle));
  }
}
