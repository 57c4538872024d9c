// @attn/cuda: the CUDA device runtime. Importing it registers device 'cuda' with @attn/core, so
// tensor(..., { device: 'cuda' }), t.to('cuda') and toFloat32Array() work. The native addon loads
// on first use; when it or a device is missing, availability() says why and nothing throws here.
import { registerDeviceRuntime } from '@attn/core';
import { cudaRuntime } from './runtime.js';

registerDeviceRuntime(cudaRuntime);

export {
  cudaRuntime,
  allocate,
  copyDeviceToDevice,
  copyDeviceToHost,
  copyDeviceToHostAsync,
  copyHostToDevice,
  fill,
  synchronize,
} from './runtime.js';
export { deviceCount, deviceProperties, driverVersion, runtimeVersion, type CudaDeviceProperties } from './devices.js';
export { CudaStorage, isCudaStorage } from './storage.js';
export { memoryStats, resetPeakMemoryStats, emptyCache, recordStream } from './memory.js';
export type { MemoryStats } from './memory-stats.js';
export { Stream, currentStream, setCurrentStream, withStream, type StreamOptions } from './stream.js';
export { Event, type EventOptions } from './event.js';
export { CudaError, CudaOutOfMemoryError } from './errors.js';
export { buildInfo, type BuildInfo } from './build-info.js';

/** Whether the addon loaded and a device is present; otherwise `reason` starts with 'unavailable: '. */
export const availability = cudaRuntime.availability;
