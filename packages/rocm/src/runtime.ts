// The 'rocm' device runtime: @attn/cuda's TS runtime (its runtime factory) over this package's
// addon, build/Release/attn_rocm.node, which is @attn/cuda's native/src compiled with hipcc. One
// source, two builds, one TS layer: nothing of the runtime is copied here. Creating it loads
// nothing; index.ts registers it with core.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createGpuRuntime,
  type GpuDeviceProperties,
  type GpuEvent,
  type GpuStorage,
  type GpuStream,
} from '@attn/cuda/runtime-factory';

/** The package folder: this file sits in src/ (sources) or dist/ (build), one level below it. */
export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ADDON_NAME = 'attn_rocm';

export const rocm = createGpuRuntime({
  type: 'rocm',
  packageRoot: PACKAGE_ROOT,
  addonName: ADDON_NAME,
  buildHint: 'run `pnpm --filter @attn/rocm build:native` where ROCm (hipcc) is installed',
});

/** The DeviceRuntime registered for 'rocm'. */
export const rocmRuntime = rocm.runtime;

/** Whether the addon loaded and HIP sees a GPU; otherwise `reason` starts with 'unavailable: '. Never throws. */
export const availability = rocm.availability;
/** The same as availability(); the name the ROCm backend packages use. */
export const rocmAvailability = rocm.availability;

// The runtime's functions, bound to this package's addon. currentStream(i) is the device's current
// hipStream_t as an integer: the ROCm backends launch on it.
export const {
  allocate,
  copyDeviceToDevice,
  copyDeviceToHost,
  copyDeviceToHostAsync,
  copyHostToDevice,
  fill,
  synchronize,
  deviceCount,
  deviceProperties,
  driverVersion,
  runtimeVersion,
  memoryStats,
  resetPeakMemoryStats,
  emptyCache,
  recordStream,
  currentStream,
  setCurrentStream,
  withStream,
  buildInfo,
} = rocm;

/** How the runtime addon was built (platform, archs, compiler, HIP versions), or why it did not load. */
export const rocmBuildInfo = rocm.buildInfo;

/** A stream of the ROCm runtime: `new Stream({ device })`, `Stream.current(i)`. */
export const Stream = rocm.Stream;
export type Stream = GpuStream;
/** An event of the ROCm runtime: `new Event({ device, timing })`. */
export const Event = rocm.Event;
export type Event = GpuEvent;

export type RocmDeviceProperties = GpuDeviceProperties<'rocm'>;

/** True for storage made by this runtime (a 'rocm' tensor's), live or disposed. */
export function isRocmStorage(s: unknown): s is GpuStorage {
  return rocm.isStorage(s);
}
