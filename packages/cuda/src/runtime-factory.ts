// @attn/cuda/runtime-factory: the whole TS runtime over one build of native/src, for either device
// type. @attn/cuda makes its 'cuda' runtime here from its nvcc build; @attn/rocm makes its 'rocm'
// runtime here from its hipcc build of the same sources: one source, two builds, one TS layer.
// Side-effect free: nothing is registered with core and no addon is loaded until first use.
import type { Availability, DeviceRuntime } from '@attn/core';
import { createBuildInfo, type BuildInfo } from './build-info.js';
import { createDeviceOps, type DeviceOps } from './device-ops.js';
import { createDevices, type Devices } from './devices.js';
import { createEventClass, type EventClass } from './event.js';
import { type CaptureSlot, createGraphs, type Graphs } from './graph.js';
import { createMemoryControls, type MemoryControls } from './memory.js';
import { createNativeAccess, type AddonLocation, type NativeAccess } from './native.js';
import { gpuPlatform, type GpuType } from './platform.js';
import { createStreams, type Streams } from './stream.js';

export interface GpuRuntimeOptions<T extends GpuType = GpuType> extends AddonLocation {
  /** The device type core will know the runtime by. */
  readonly type: T;
}

/** A runtime's DeviceRuntime (what core registers) and the extras kernel packages and users call. */
export interface GpuRuntime<T extends GpuType = GpuType>
  extends Devices<T>, DeviceOps, MemoryControls, Streams, Pick<Graphs, 'captureGraph'> {
  readonly type: T;
  /** For registerDeviceRuntime: frozen, its methods bound to this runtime's addon. */
  readonly runtime: DeviceRuntime & { readonly type: T };
  /** `{ ok: true }`, or `{ ok: false, reason }` (what is missing and how to fix it). Never throws. */
  availability(): Availability;
  readonly Event: EventClass;
  buildInfo(): BuildInfo;
  /** The addon behind this runtime: its load state, and a test hook to simulate it. */
  readonly native: NativeAccess;
}

/**
 * The runtime over the addon of the package at `packageRoot` (see @attn/native's loader). Loading and probing
 * happen on first use and never throw; calls that need a device throw DeviceError
 * ATTN_DEVICE_UNAVAILABLE with the reason. Call once per package: two runtimes over one addon would
 * each think they own its memory.
 */
export function createGpuRuntime<T extends GpuType>(options: GpuRuntimeOptions<T>): GpuRuntime<T> {
  const { type, ...location } = options;
  const native = createNativeAccess(gpuPlatform(type), location);
  const devices = createDevices<T>(native);
  const capture: CaptureSlot = { state: null };
  const streams = createStreams(native, devices);
  const ops = createDeviceOps(native, devices, streams, capture);
  const memory = createMemoryControls(native, devices, ops.isStorage);
  const graphs = createGraphs(native, devices, streams, capture, ops.isStorage);
  const availability = (): Availability => native.state().availability;

  const runtime = Object.freeze({
    type,
    availability,
    deviceCount: devices.deviceCount,
    properties: (index: number) => devices.deviceProperties(index),
    allocate: ops.allocate,
    copyHostToDevice: ops.copyHostToDevice,
    copyDeviceToHost: ops.copyDeviceToHost,
    copyDeviceToDevice: ops.copyDeviceToDevice,
    fill: ops.fill,
    synchronize: ops.synchronize,
    capturing: graphs.capturing,
    noteCaptureUse: graphs.noteCaptureUse,
  });

  return Object.freeze({
    ...devices,
    ...ops,
    ...memory,
    ...streams,
    captureGraph: graphs.captureGraph,
    type,
    runtime,
    availability,
    Event: createEventClass(native, devices, streams),
    buildInfo: createBuildInfo(native),
    native,
  });
}

export type { AddonLocation, AddonLoad, NativeAccess, NativeState } from './native.js';
export type { NativeBinding, NativeBuildInfo, NativeDeviceProperties, NativeProbe } from './binding.js';
export type { GpuDeviceProperties } from './devices.js';
export type { EventClass, EventOptions } from './event.js';
export type { CaptureOptions } from './graph.js';
export { GpuGraph } from './graph.js';
export type { MemoryStats } from './memory-stats.js';
export type { StreamClass, StreamOptions } from './stream.js';
export type { BuildInfo, DeviceOps, Devices, MemoryControls, Streams };
export { GpuEvent } from './event.js';
export { GpuStream } from './stream.js';
export { GpuStorage } from './storage.js';
export { CudaError, CudaOutOfMemoryError } from './errors.js';
export { formatCudaVersion, formatHipVersion, gpuPlatform, type GpuPlatform, type GpuType } from './platform.js';
