// @attn/rocm: the ROCm (HIP) device runtime, built from @attn/cuda's sources and TS runtime factory,
// and the choice between AOTriton and CK for ROCm attention (as PyTorch's preferred_rocm_fa_library).
// Importing it registers device 'rocm' with @attn/core and never throws: the addon loads on first
// use, and when it or a GPU is missing, availability() says why.
import { registerDeviceRuntime } from '@attn/core';
import type { GpuDeviceProperties, GpuEvent, GpuStorage, GpuStream } from '@attn/cuda/runtime-factory';
import { rocm } from './runtime.js';

registerDeviceRuntime(rocm.runtime);

export { effectiveBounds, type Bounds } from './bounds.js';
export {
  ckProblems,
  defaultFaLibraryDeps,
  describeSource,
  isCkSdpaAvailable,
  preferredRocmFaLibrary,
  registerRocmFaLibrary,
  resetRocmFaPreference,
  resolveAndWarn,
  resolveRocmFaLibrary,
  RocmFaLibraryError,
  unregisterRocmFaLibrary,
  visibleRocmArchs,
  type FaLibraryDeps,
  type RocmFaChoice,
  type RocmFaLibrary,
  type RocmFaLibraryProbe,
  type RocmFaPreference,
  type VisibleArchs,
} from './fa-library.js';
export { rocmFaLibraryRule } from './fa-library-rule.js';
export { resetWarnOnce, warnOnce } from './warn-once.js';
export {
  CudaError,
  CudaOutOfMemoryError,
  GpuStorage,
  type BuildInfo,
  type EventOptions,
  type MemoryStats,
  type StreamOptions,
} from '@attn/cuda/runtime-factory';

/** The DeviceRuntime registered for 'rocm'. */
export const rocmRuntime = rocm.runtime;

/** Whether the addon loaded and HIP sees a GPU; otherwise `reason` says why. Never throws. */
export const availability = rocm.availability;
/** The same as availability(); the name the ROCm backend packages use. */
export const rocmAvailability = rocm.availability;

// The runtime's functions, bound to this package's addon. currentStream(i) is the device's current
// hipStream_t as an integer: the ROCm backends launch on it.
export const { allocate, fill, memoryStats, resetPeakMemoryStats, emptyCache, recordStream } = rocm;
export const { copyDeviceToDevice, copyDeviceToHost, copyDeviceToHostAsync, copyHostToDevice, synchronize } = rocm;
export const { deviceCount, deviceProperties, driverVersion, runtimeVersion, buildInfo } = rocm;
export const { currentStream, setCurrentStream, withStream } = rocm;

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
