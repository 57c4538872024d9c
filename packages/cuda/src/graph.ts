// CUDA graphs for one runtime: captureGraph(fn) runs fn while the device's current stream records
// its work instead of running it, and returns a graph whose replay() queues all of that work again
// with one launch (a few microseconds of host time, whatever fn did on the host).
//
// Rules (README, "CUDA graphs"):
// - fn is synchronous. Its device work must go to the capturing device's current stream: work on
//   another device or stream, host reads and writes of device memory (toFloat32Array, tensor(...,
//   { device })), synchronize(), emptyCache() throw GraphError, and the capture stays usable.
// - Memory: outputs and scratch allocated during the capture come from the graph's private pool in
//   the caching allocator (native/src/caching_allocator.h) and stay reserved while the graph lives;
//   every replay writes the same outputs. Inputs are the tensors the captured calls read: copy new
//   data into them (copyDeviceToDevice, a kernel) before replay().
// - Tracking, not pinning: the graph remembers every storage its captured calls read or write
//   (core reports the inputs of each call, the allocator the outputs) and replay() throws
//   ATTN_GRAPH_TENSOR_DISPOSED once one was disposed. Pinning would keep a disposed input's memory
//   alive for nothing: its owner can no longer write new data into it.
import { type DeviceStorage, GraphError } from '@attn/core';
import type { NativeBinding } from './binding.js';
import type { Devices } from './devices.js';
import { callNative, translateNativeError } from './errors.js';
import type { NativeAccess } from './native.js';
import { gpuPlatform, type GpuType } from './platform.js';
import type { GpuStorage } from './storage.js';
import { checkSameRuntime } from './runtime-handle.js';
import type { GpuStream, Streams } from './stream.js';

/** The capture underway, if any (one per process at a time). */
export interface CaptureState {
  readonly device: number;
  /** The capturing stream's handle: the device's current stream when the capture began. */
  readonly stream: bigint;
  /** Storages allocated during the capture: outputs, and scratch disposed before it ended. */
  readonly allocated: GpuStorage[];
  /** Storages the captured calls read or write (core's noteCaptureUse, device copies and fills). */
  readonly used: Set<DeviceStorage>;
}

/** Shared by the runtime's parts: device-ops checks it on every allocation and copy. */
export interface CaptureSlot {
  state: CaptureState | null;
}

export interface CaptureOptions {
  /** Device whose current stream captures; default 0. */
  readonly device?: number;
}

interface HeldGraph {
  readonly addon: NativeBinding;
  readonly type: GpuType;
  readonly id: bigint;
}

// Destroying waits for the graph's launches and releases its pool; failures become warnings.
const graphFinalizer = new FinalizationRegistry<HeldGraph>((held) => {
  try {
    callNative(() => held.addon.graphDestroy(held.id));
  } catch (e) {
    process.emitWarning(
      `${gpuPlatform(held.type).packageName}: destroying an undisposed graph failed: ${e instanceof Error ? e.message : String(e)}`,
      { code: 'ATTN_FINALIZER_FREE_FAILED' },
    );
  }
});

/** A captured graph. `result` is what the captured function returned (its outputs, rewritten by each replay). */
export class GpuGraph<T = unknown> {
  readonly deviceType: GpuType;
  readonly device: number;
  readonly result: T;
  #id: bigint;
  #disposed = false;
  #replays = 0;
  readonly #addon: NativeBinding;
  readonly #streams: Streams;
  readonly #tracked: readonly DeviceStorage[];

  /** Made by captureGraph only. */
  constructor(
    addon: NativeBinding,
    type: GpuType,
    device: number,
    id: bigint,
    result: T,
    tracked: readonly DeviceStorage[],
    streams: Streams,
  ) {
    this.#addon = addon;
    this.deviceType = type;
    this.device = device;
    this.#id = id;
    this.result = result;
    this.#tracked = tracked;
    this.#streams = streams;
    graphFinalizer.register(this, { addon, type, id }, this);
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Replays so far. */
  get replayCount(): number {
    return this.#replays;
  }

  /** Nodes the capture recorded (kernels, copies, memsets): what one replay launches. */
  get nodeCount(): number {
    const id = this.#id;
    if (this.#disposed) throw new GraphError('ATTN_GRAPH_DISPOSED', 'nodeCount after dispose().');
    return callNative(() => this.#addon.graphNodeCount(id));
  }

  /** How many storages the graph reads or writes (inputs, outputs); replay() checks each is alive. */
  get trackedStorages(): number {
    return this.#tracked.length;
  }

  /**
   * Queues the captured work on `stream` (default: the device's current stream), after the work
   * already queued there; it reads the inputs' current contents and rewrites the outputs. Using the
   * inputs or outputs on another stream needs the usual ordering (events, recordStream).
   */
  replay(stream?: GpuStream): void {
    if (this.#disposed) {
      throw new GraphError(
        'ATTN_GRAPH_DISPOSED',
        'replay() after dispose(): capture the work again with captureGraph().',
      );
    }
    for (const s of this.#tracked) {
      if (s.disposed) {
        throw new GraphError(
          'ATTN_GRAPH_TENSOR_DISPOSED',
          `replay(): a tensor the graph reads or writes (${s.bytes} bytes on ${s.device.type}:${s.device.index}) was disposed. ` +
            'Keep the captured inputs and outputs alive while the graph lives, or dispose the graph and capture again.',
        );
      }
    }
    const handle = stream
      ? checkSameRuntime(this.deviceType, 'replay: stream', stream).handle
      : this.#streams.currentStream(this.device);
    const id = this.#id;
    callNative(() => this.#addon.graphLaunch(id, handle));
    this.#replays++;
  }

  /**
   * Waits for the graph's replays, destroys it and returns its private memory to the cache (outputs
   * still held by the caller stay valid, as ordinary tensors). Twice is a no-op.
   */
  dispose(): void {
    if (this.#disposed) return;
    const id = this.#id;
    callNative(() => this.#addon.graphDestroy(id)); // refused during a capture: the graph stays usable
    this.#disposed = true;
    graphFinalizer.unregister(this);
  }
}

export interface Graphs {
  /**
   * Runs `fn` (synchronous) while the current stream of `options.device` (default 0) captures its
   * work into a graph, and returns the graph; `graph.result` is fn's return value. If fn throws, the
   * capture ends cleanly (nothing kept, stream usable) and the error propagates.
   */
  captureGraph<T>(fn: () => T, options?: CaptureOptions): GpuGraph<T>;
  /** Whether `device` captures now (what core's validation asks). */
  capturing(device: number): boolean;
  /** Core's report of storages a captured call reads or writes. */
  noteCaptureUse(device: number, storages: readonly DeviceStorage[]): void;
}

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return (
    (typeof x === 'object' || typeof x === 'function') &&
    x !== null &&
    typeof (x as { then?: unknown }).then === 'function'
  );
}

export function createGraphs(
  native: NativeAccess,
  devices: Devices,
  streams: Streams,
  slot: CaptureSlot,
  isStorage: (s: unknown) => s is GpuStorage,
): Graphs {
  const type = native.platform.type;
  return {
    capturing: (device) => slot.state !== null && slot.state.device === device,

    noteCaptureUse(device, storages) {
      const state = slot.state;
      if (state === null || state.device !== device) return;
      for (const s of storages) if (isStorage(s)) state.used.add(s);
    },

    captureGraph<T>(fn: () => T, options: CaptureOptions = {}): GpuGraph<T> {
      if (typeof fn !== 'function')
        throw new GraphError(
          'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
          'captureGraph takes a function that issues the work to capture.',
        );
      const addon = native.require();
      const device = devices.checkIndex(options.device ?? 0);
      if (slot.state !== null) {
        throw new GraphError(
          'ATTN_GRAPH_NESTED',
          `captureGraph inside captureGraph (device ${slot.state.device} is capturing): captures do not nest. Capture the inner work in the outer graph, or separately.`,
        );
      }
      const stream = streams.currentStream(device);
      callNative(() => addon.graphBegin(device));
      const state: CaptureState = { device, stream, allocated: [], used: new Set() };
      slot.state = state;
      let result: T;
      try {
        result = fn();
        if (isThenable(result)) {
          // Its continuation would run after the capture ended: that work would run once, eagerly.
          Promise.resolve(result).catch(() => {});
          throw new GraphError(
            'ATTN_GRAPH_ASYNC',
            'captureGraph takes a synchronous function; this one returned a promise. Issue the work without awaiting inside the capture.',
          );
        }
      } catch (e) {
        slot.state = null;
        try {
          addon.graphAbort(device);
        } catch {
          // The function's error is the one to report; the native side ended the capture either way.
        }
        throw e;
      }
      slot.state = null;
      let id: bigint;
      try {
        id = addon.graphEnd(device);
      } catch (e) {
        const cause = translateNativeError(e);
        throw new GraphError(
          'ATTN_GRAPH_CAPTURE_FAILED',
          `${gpuPlatform(type).name} could not capture or instantiate the graph: ${cause instanceof Error ? cause.message : String(cause)}`,
          { cause },
        );
      }
      // Scratch (allocated and disposed inside the capture) stays reserved in the graph's pool and
      // belongs to nobody else: only the storages alive at the end are the caller's to keep alive.
      const scratch = new Set<DeviceStorage>(state.allocated.filter((s) => s.disposed));
      const tracked = new Set<DeviceStorage>();
      for (const s of state.used) if (!scratch.has(s)) tracked.add(s);
      for (const s of state.allocated) if (!s.disposed) tracked.add(s);
      return new GpuGraph<T>(addon, type, device, id, result, [...tracked], streams);
    },
  };
}

/**
 * Throws unless work on device `index` may be issued now: no capture, or a capture of that device
 * whose stream is still the current one (called by allocations, device copies and fills).
 */
export function checkCaptureWork(
  slot: CaptureSlot,
  streams: Streams,
  index: number,
  what: string,
): CaptureState | null {
  const state = slot.state;
  if (state === null) return null;
  if (index !== state.device) {
    throw new GraphError(
      'ATTN_GRAPH_DEVICE',
      `${what} on device ${index} while device ${state.device} captures a graph: a graph records one device's work, and this would run once, now. Capture each device's work in its own graph.`,
    );
  }
  if (streams.currentStream(index) !== state.stream) {
    throw new GraphError(
      'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
      `${what} on a stream other than the capturing one (the current stream changed inside captureGraph): that work would run once, now, and never replay. Keep the capturing stream current.`,
    );
  }
  return state;
}

/** Throws while any capture is underway: `what` reads or writes host memory, or waits on the host. */
export function refuseDuringCapture(slot: CaptureSlot, what: string, instead: string): void {
  const state = slot.state;
  if (state === null) return;
  throw new GraphError(
    'ATTN_GRAPH_CAPTURE_UNSUPPORTED',
    `${what} cannot run while device ${state.device} captures a graph: a graph records device work only. ${instead}`,
  );
}
