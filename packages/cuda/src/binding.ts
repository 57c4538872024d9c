// The native addon's surface (native/src/bind_*.cpp), typed by hand. Pointers and stream/event
// handles are bigints; sizes are numbers (exact up to 2^53).
import type { MemoryStats } from './memory-stats.js';

export interface NativeProbe {
  readonly count: number;
  readonly platform: string;
  /** Set when the runtime could not enumerate devices, e.g. 'cudaErrorNoDevice'. */
  readonly errorName?: string;
  readonly error?: string;
  readonly errorNumber?: number;
}

export interface NativeDeviceProperties {
  readonly index: number;
  readonly name: string;
  readonly arch: string;
  readonly major: number;
  readonly minor: number;
  readonly multiProcessorCount: number;
  readonly totalMemoryBytes: number;
  readonly l2CacheBytes: number;
  readonly sharedMemoryPerBlock: number;
  readonly sharedMemoryPerBlockOptin: number;
  readonly warpSize: number;
  readonly maxThreadsPerBlock: number;
  readonly pciBusId: string;
}

export interface NativeBuildInfo {
  readonly platform: string;
  /** Semicolon list as given to CMake, e.g. '80;90a'. */
  readonly archs: string;
  readonly compiler: string;
  readonly compilerVersion: string;
  readonly buildType: string;
  readonly flags: string;
  readonly runtimeHeadersVersion: number;
  readonly napiVersion: number;
}

export interface NativeBinding {
  probe(): NativeProbe;
  deviceProperties(device: number): NativeDeviceProperties;
  driverVersion(): number;
  runtimeVersion(): number;
  buildInfo(): NativeBuildInfo;

  allocate(device: number, bytes: number): bigint;
  free(device: number, pointer: bigint): void;
  /** The address of the allocator's C table (native/include/attn/allocator_api.h), for kernel addons. */
  allocatorApi(): bigint;
  recordStream(device: number, pointer: bigint, stream: bigint): void;
  memoryStats(device: number): MemoryStats;
  resetPeakMemoryStats(device: number): void;
  emptyCache(device: number): void;
  copyHostToDevice(device: number, dst: bigint, src: Uint8Array): void;
  copyDeviceToHost(device: number, dst: Uint8Array, src: bigint): void;
  /** Enqueued at call time on the current stream; resolves once the bytes are in dst. */
  copyDeviceToHostAsync(device: number, dst: Uint8Array, src: bigint): Promise<void>;
  copyDeviceToDevice(dstDevice: number, dst: bigint, srcDevice: number, src: bigint, bytes: number): void;
  fill(device: number, dst: bigint, byteValue: number, bytes: number): void;
  synchronize(device: number): void;

  streamCreate(device: number): bigint;
  streamDestroy(stream: bigint): void;
  streamSynchronize(stream: bigint): void;
  streamQuery(stream: bigint): boolean;
  streamDevice(stream: bigint): number;
  currentStream(device: number): bigint;
  defaultStream(device: number): bigint;
  setCurrentStream(device: number, stream: bigint): void;
  eventCreate(device: number, timing: boolean): bigint;
  eventDestroy(event: bigint): void;
  eventRecord(event: bigint, stream: bigint): void;
  eventSynchronize(event: bigint): void;
  eventQuery(event: bigint): boolean;
  eventElapsedMs(start: bigint, end: bigint): number;
  streamWaitEvent(stream: bigint, event: bigint): void;

  /** Starts capturing the device's current stream. */
  graphBegin(device: number): void;
  /** Ends the capture and instantiates the graph: its id. */
  graphEnd(device: number): bigint;
  /** Ends a failed capture, discarding it. */
  graphAbort(device: number): void;
  graphLaunch(graph: bigint, stream: bigint): void;
  /** Waits for the graph's launches, destroys it, releases its memory pool. */
  graphDestroy(graph: bigint): void;
  /** Nodes (kernels, copies, memsets) the capture recorded. */
  graphNodeCount(graph: bigint): number;

  philoxRaw(device: number, inputs: Uint32Array): Uint32Array;
  /** attn/philox.h's host path; needs no device. */
  philoxRawHost(inputs: Uint32Array): Uint32Array;
  dropoutWords(
    device: number,
    seed: bigint,
    offset: number,
    bhCount: number,
    seqQ: number,
    seqK: number,
    threshold: number,
  ): { words: Uint32Array; keep: Uint8Array };
}

/** Every function the TS side calls; an addon missing one is from an older build. */
export const BINDING_FUNCTIONS: readonly (keyof NativeBinding)[] = [
  'probe',
  'deviceProperties',
  'driverVersion',
  'runtimeVersion',
  'buildInfo',
  'allocate',
  'free',
  'allocatorApi',
  'recordStream',
  'memoryStats',
  'resetPeakMemoryStats',
  'emptyCache',
  'copyHostToDevice',
  'copyDeviceToHost',
  'copyDeviceToHostAsync',
  'copyDeviceToDevice',
  'fill',
  'synchronize',
  'streamCreate',
  'streamDestroy',
  'streamSynchronize',
  'streamQuery',
  'streamDevice',
  'currentStream',
  'defaultStream',
  'setCurrentStream',
  'eventCreate',
  'eventDestroy',
  'eventRecord',
  'eventSynchronize',
  'eventQuery',
  'eventElapsedMs',
  'streamWaitEvent',
  'graphBegin',
  'graphEnd',
  'graphAbort',
  'graphLaunch',
  'graphDestroy',
  'graphNodeCount',
  'philoxRaw',
  'philoxRawHost',
  'dropoutWords',
];
