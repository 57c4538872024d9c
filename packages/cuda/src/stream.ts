// Streams: queues of device work. Each device has a current stream (its default one unless changed)
// on which copies, fills and kernel addons run; currentStream() hands it to kernel packages.
// GpuStream holds the behaviour; each runtime gets its own Stream subclass bound to its addon, so
// `new Stream()` needs no runtime argument and a CUDA stream is refused where a ROCm one is needed.
import { AttnInputError, DisposedError } from '@attn/core';
import type { NativeBinding } from './binding.js';
import type { Devices } from './devices.js';
import { callNative } from './errors.js';
import { checkSameRuntime, type RuntimeHandle } from './runtime-handle.js';
import type { NativeAccess } from './native.js';
import { gpuPlatform, type GpuPlatform, type GpuType } from './platform.js';

export interface StreamOptions {
  /** Device index; default 0. */
  readonly device?: number;
}

interface HeldStream {
  readonly addon: NativeBinding;
  readonly type: GpuType;
  readonly handle: bigint;
}

// Destroying waits for the stream's work; a failure cannot be thrown from here, so it is a warning.
const streamFinalizer = new FinalizationRegistry<HeldStream>((held) => {
  try {
    callNative(() => held.addon.streamDestroy(held.handle));
  } catch (e) {
    process.emitWarning(
      `${gpuPlatform(held.type).packageName}: destroying an undisposed stream failed: ${e instanceof Error ? e.message : String(e)}`,
      { code: 'ATTN_FINALIZER_FREE_FAILED' },
    );
  }
});

/** An existing stream to wrap instead of creating one. */
interface WrappedStream {
  readonly handle: bigint;
  readonly device: number;
}

export class GpuStream {
  readonly deviceType: GpuType;
  readonly device: number;
  /** False for a wrapped stream (a device's default or current one): dispose() is not allowed. */
  readonly owned: boolean;
  #handle: bigint;
  #disposed = false;
  readonly #addon: NativeBinding;

  /** Runtimes construct streams through their own subclass (createStreams' Stream). */
  protected constructor(native: NativeAccess, devices: Devices, options: StreamOptions, wrap: WrappedStream | null) {
    this.deviceType = native.platform.type;
    this.#addon = native.require();
    if (wrap) {
      this.device = wrap.device;
      this.owned = false;
      this.#handle = wrap.handle;
      return;
    }
    const device = devices.checkIndex(options.device ?? 0);
    const addon = this.#addon;
    this.device = device;
    this.owned = true;
    this.#handle = callNative(() => addon.streamCreate(device));
    streamFinalizer.register(this, { addon, type: this.deviceType, handle: this.#handle }, this);
  }

  /** The cudaStream_t / hipStream_t as an integer, for kernel addons. */
  get handle(): bigint {
    if (this.#disposed) throw new DisposedError(`stream on ${this.deviceType}:${this.device}`);
    return this.#handle;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Waits until all work queued so far has finished. */
  synchronize(): void {
    const handle = this.handle;
    callNative(() => this.#addon.streamSynchronize(handle));
  }

  /** True when all work queued so far has finished. */
  query(): boolean {
    const handle = this.handle;
    return callNative(() => this.#addon.streamQuery(handle));
  }

  /** Later work on this stream waits for the event's captured work (which may be on another device). */
  waitEvent(event: RuntimeHandle): void {
    const handle = this.handle;
    const eventHandle = checkSameRuntime(this.deviceType, 'waitEvent: event', event).handle;
    callNative(() => this.#addon.streamWaitEvent(handle, eventHandle));
  }

  /** Destroys a stream made with `new Stream()` after its work finishes; its cached memory moves to the
   * device's default stream. Twice is a no-op; wrapped default or current streams cannot be disposed. */
  dispose(): void {
    if (this.#disposed) return;
    if (!this.owned) {
      throw new AttnInputError(
        'ATTN_BAD_HANDLE',
        `This Stream wraps a stream ${gpuPlatform(this.deviceType).packageName} owns; only streams made with new Stream() can be disposed.`,
      );
    }
    this.#disposed = true;
    streamFinalizer.unregister(this);
    const handle = this.#handle;
    callNative(() => this.#addon.streamDestroy(handle));
  }
}

/** The Stream class of one runtime. */
export interface StreamClass {
  /** A new non-blocking stream on the device. */
  new (options?: StreamOptions): GpuStream;
  /** Wraps a stream the runtime already knows (e.g. currentStream()); throws for unknown handles. */
  fromHandle(handle: bigint): GpuStream;
  /** The device's current stream. */
  current(device?: number): GpuStream;
  readonly prototype: GpuStream;
}

export interface Streams {
  readonly Stream: StreamClass;
  /** The device's current stream as an integer (a cudaStream_t / hipStream_t): kernel addons launch on it. */
  currentStream(device?: number): bigint;
  /**
   * Makes `stream` the current stream of its device; null restores the default stream of `device`.
   * Keep a reference to the stream while it is current: a collected stream is destroyed, and its
   * device's default stream becomes current again.
   */
  setCurrentStream(stream: GpuStream | null, device?: number): void;
  /**
   * Runs `fn` with `stream` current on its device and restores the previous current stream when fn
   * returns or throws. For synchronous code: work an async fn queues after its first await runs on
   * whatever stream is current then.
   */
  withStream<T>(stream: GpuStream, fn: () => T): T;
}

export function createStreams(native: NativeAccess, devices: Devices): Streams {
  const platform: GpuPlatform = native.platform;
  // Set by fromHandle for the one constructor call that wraps an existing stream: the public
  // constructor takes only options, so the wrapped handle travels beside it.
  let wrapping: WrappedStream | null = null;

  const currentStream = (device = 0): bigint => {
    const addon = native.require();
    devices.checkIndex(device);
    return callNative(() => addon.currentStream(device));
  };

  class Stream extends GpuStream {
    constructor(options: StreamOptions = {}) {
      const wrap = wrapping;
      wrapping = null;
      super(native, devices, options, wrap);
    }

    static fromHandle(handle: bigint): GpuStream {
      const addon = native.require();
      const device = callNative(() => addon.streamDevice(handle));
      wrapping = { handle, device };
      try {
        return new Stream();
      } finally {
        wrapping = null;
      }
    }

    static current(device = 0): GpuStream {
      return Stream.fromHandle(currentStream(device));
    }
  }

  return {
    Stream,
    currentStream,
    setCurrentStream(stream, device = 0) {
      const addon = native.require();
      if (stream === null) {
        devices.checkIndex(device);
        callNative(() => addon.setCurrentStream(device, 0n));
        return;
      }
      const handle = checkSameRuntime(platform.type, 'setCurrentStream: stream', stream).handle;
      callNative(() => addon.setCurrentStream(stream.device, handle));
    },
    withStream(stream, fn) {
      const addon = native.require();
      const handle = checkSameRuntime(platform.type, 'withStream: stream', stream).handle;
      const previous = callNative(() => addon.currentStream(stream.device));
      callNative(() => addon.setCurrentStream(stream.device, handle));
      try {
        return fn();
      } finally {
        callNative(() => addon.setCurrentStream(stream.device, previous));
      }
    },
  };
}
