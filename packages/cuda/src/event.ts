// Events: markers in a stream's work, for waiting across streams and for timing on the device.
// As with streams, GpuEvent holds the behaviour and each runtime gets an Event subclass bound to
// its addon.
import { DisposedError } from '@attn/core';
import type { NativeBinding } from './binding.js';
import type { Devices } from './devices.js';
import { callNative } from './errors.js';
import type { NativeAccess } from './native.js';
import { gpuPlatform, type GpuType } from './platform.js';
import { checkSameRuntime } from './runtime-handle.js';
import type { GpuStream, Streams } from './stream.js';

export interface EventOptions {
  /** Device index; default 0. */
  readonly device?: number;
  /** Whether elapsedMs() can use it; default true. Without timing, recording is cheaper. */
  readonly timing?: boolean;
}

interface HeldEvent {
  readonly addon: NativeBinding;
  readonly type: GpuType;
  readonly handle: bigint;
}

const eventFinalizer = new FinalizationRegistry<HeldEvent>((held) => {
  try {
    callNative(() => held.addon.eventDestroy(held.handle));
  } catch (e) {
    process.emitWarning(
      `${gpuPlatform(held.type).packageName}: destroying an undisposed event failed: ${e instanceof Error ? e.message : String(e)}`,
      { code: 'ATTN_FINALIZER_FREE_FAILED' },
    );
  }
});

export class GpuEvent {
  readonly deviceType: GpuType;
  readonly device: number;
  readonly timing: boolean;
  #handle: bigint;
  #disposed = false;
  readonly #addon: NativeBinding;
  readonly #streams: Streams;

  /** Runtimes construct events through their own subclass (createEventClass' Event). */
  protected constructor(native: NativeAccess, devices: Devices, streams: Streams, options: EventOptions) {
    const addon = native.require();
    const device = devices.checkIndex(options.device ?? 0);
    const timing = options.timing ?? true;
    this.deviceType = native.platform.type;
    this.device = device;
    this.timing = timing;
    this.#addon = addon;
    this.#streams = streams;
    this.#handle = callNative(() => addon.eventCreate(device, timing));
    eventFinalizer.register(this, { addon, type: this.deviceType, handle: this.#handle }, this);
  }

  get handle(): bigint {
    if (this.#disposed) throw new DisposedError(`event on ${this.deviceType}:${this.device}`);
    return this.#handle;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** The handle of `stream`, or of this device's current stream. */
  #streamHandle(what: string, stream: GpuStream | undefined): bigint {
    return stream ? checkSameRuntime(this.deviceType, what, stream).handle : this.#streams.currentStream(this.device);
  }

  /** Captures the work queued so far on `stream` (default: the device's current stream). */
  record(stream?: GpuStream): this {
    const handle = this.handle;
    const streamHandle = this.#streamHandle('record: stream', stream);
    callNative(() => this.#addon.eventRecord(handle, streamHandle));
    return this;
  }

  /** Waits until the captured work has finished. */
  synchronize(): void {
    const handle = this.handle;
    callNative(() => this.#addon.eventSynchronize(handle));
  }

  /** True when the captured work has finished. */
  query(): boolean {
    const handle = this.handle;
    return callNative(() => this.#addon.eventQuery(handle));
  }

  /** Milliseconds of device time from this event to `end`; waits for both. Both need timing. */
  elapsedMs(end: GpuEvent): number {
    const start = this.handle;
    const stop = checkSameRuntime(this.deviceType, 'elapsedMs: end', end).handle;
    return callNative(() => this.#addon.eventElapsedMs(start, stop));
  }

  /** Makes later work on `stream` (default: the current stream of this event's device) wait for it. */
  wait(stream?: GpuStream): void {
    const handle = this.handle;
    const streamHandle = this.#streamHandle('wait: stream', stream);
    callNative(() => this.#addon.streamWaitEvent(streamHandle, handle));
  }

  /** Releases the event; twice is a no-op. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    eventFinalizer.unregister(this);
    const handle = this.#handle;
    callNative(() => this.#addon.eventDestroy(handle));
  }
}

/** The Event class of one runtime. */
export interface EventClass {
  new (options?: EventOptions): GpuEvent;
  readonly prototype: GpuEvent;
}

export function createEventClass(native: NativeAccess, devices: Devices, streams: Streams): EventClass {
  return class Event extends GpuEvent {
    constructor(options: EventOptions = {}) {
      super(native, devices, streams, options);
    }
  };
}
