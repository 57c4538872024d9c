// Streams: queues of device work. Each device has a current stream (its default one unless changed)
// on which copies, fills and kernel addons run; currentStream() hands it to kernel packages.
import { AttnInputError, DisposedError } from '@attn/core';
import { deviceCount } from './devices.js';
import { callNative } from './errors.js';
import type { Event } from './event.js';
import { requireAddon } from './native.js';
import { checkDeviceIndex } from './validate.js';

export interface StreamOptions {
  /** Device index; default 0. */
  readonly device?: number;
}

// Destroying waits for the stream's work; a failure cannot be thrown from here, so it is a warning.
const streamFinalizer = new FinalizationRegistry<bigint>((handle) => {
  try {
    callNative(() => requireAddon().streamDestroy(handle));
  } catch (e) {
    process.emitWarning(`@attn/cuda: destroying an undisposed stream failed: ${e instanceof Error ? e.message : String(e)}`, {
      code: 'ATTN_FINALIZER_FREE_FAILED',
    });
  }
});

// Set by Stream.fromHandle for the one constructor call that wraps an existing stream.
let wrapping: { readonly handle: bigint; readonly device: number } | null = null;

export class Stream {
  readonly device: number;
  /** False for a wrapped stream (a device's default or current one): dispose() is not allowed. */
  readonly owned: boolean;
  #handle: bigint;
  #disposed = false;

  /** A new non-blocking stream on the device. */
  constructor(options: StreamOptions = {}) {
    const wrap = wrapping;
    wrapping = null;
    if (wrap) {
      this.device = wrap.device;
      this.owned = false;
      this.#handle = wrap.handle;
      return;
    }
    const addon = requireAddon();
    const device = checkDeviceIndex(options.device ?? 0, deviceCount());
    this.device = device;
    this.owned = true;
    this.#handle = callNative(() => addon.streamCreate(device));
    streamFinalizer.register(this, this.#handle, this);
  }

  /** Wraps a stream the runtime already knows (e.g. currentStream()); throws for unknown handles. */
  static fromHandle(handle: bigint): Stream {
    const addon = requireAddon();
    const device = callNative(() => addon.streamDevice(handle));
    wrapping = { handle, device };
    try {
      return new Stream();
    } finally {
      wrapping = null;
    }
  }

  /** The device's current stream. */
  static current(device = 0): Stream {
    return Stream.fromHandle(currentStream(device));
  }

  /** The cudaStream_t as an integer, for kernel addons. */
  get handle(): bigint {
    if (this.#disposed) throw new DisposedError(`stream on cuda:${this.device}`);
    return this.#handle;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Waits until all work queued so far has finished. */
  synchronize(): void {
    callNative(() => requireAddon().streamSynchronize(this.handle));
  }

  /** True when all work queued so far has finished. */
  query(): boolean {
    return callNative(() => requireAddon().streamQuery(this.handle));
  }

  /** Later work on this stream waits for the event's captured work (which may be on another device). */
  waitEvent(event: Event): void {
    const eventHandle = event.handle;
    callNative(() => requireAddon().streamWaitEvent(this.handle, eventHandle));
  }

  /** Destroys a stream made with `new Stream()` after its work finishes; its cached memory moves to the
   * device's default stream. Twice is a no-op; wrapped default or current streams cannot be disposed. */
  dispose(): void {
    if (this.#disposed) return;
    if (!this.owned) {
      throw new AttnInputError('ATTN_BAD_HANDLE', 'This Stream wraps a stream @attn/cuda owns; only streams made with new Stream() can be disposed.');
    }
    this.#disposed = true;
    streamFinalizer.unregister(this);
    const handle = this.#handle;
    callNative(() => requireAddon().streamDestroy(handle));
  }
}

/** The device's current stream as an integer (a cudaStream_t): kernel addons launch on it. */
export function currentStream(device = 0): bigint {
  const addon = requireAddon();
  checkDeviceIndex(device, deviceCount());
  return callNative(() => addon.currentStream(device));
}

/**
 * Makes `stream` the current stream of its device; null restores the default stream of `device`.
 * Keep a reference to the stream while it is current: a collected stream is destroyed, and its
 * device's default stream becomes current again.
 */
export function setCurrentStream(stream: Stream | null, device = 0): void {
  const addon = requireAddon();
  if (stream === null) {
    checkDeviceIndex(device, deviceCount());
    callNative(() => addon.setCurrentStream(device, 0n));
    return;
  }
  const handle = stream.handle;
  callNative(() => addon.setCurrentStream(stream.device, handle));
}

/**
 * Runs `fn` with `stream` current on its device and restores the previous current stream when fn
 * returns or throws. For synchronous code: work an async fn queues after its first await runs on
 * whatever stream is current then.
 */
export function withStream<T>(stream: Stream, fn: () => T): T {
  const addon = requireAddon();
  const handle = stream.handle;
  const previous = callNative(() => addon.currentStream(stream.device));
  callNative(() => addon.setCurrentStream(stream.device, handle));
  try {
    return fn();
  } finally {
    callNative(() => addon.setCurrentStream(stream.device, previous));
  }
}
