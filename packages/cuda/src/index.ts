// @attn/cuda: the CUDA device runtime. Importing it registers device 'cuda' with @attn/core, so
// tensor(..., { device: 'cuda' }), t.to('cuda') and toFloat32Array() work, and the 'cuda-math'
// backend, the CUDA fallback every CUDA backend package brings through this dependency. The native
// addon loads on first use; when it or a device is missing, availability() says why and nothing
// throws here. The runtime itself is built by ./runtime-factory.ts, which @attn/rocm shares.
import { registerBackend, registerDeviceRuntime } from '@attn/core';
import { cuda } from './cuda-runtime.js';
import { cudaMathBackend } from './math-backend/backend.js';
import type { GpuDeviceProperties } from './devices.js';
import type { GpuEvent } from './event.js';
import type { GpuGraph } from './graph.js';
import type { GpuStorage } from './storage.js';
import type { GpuStream } from './stream.js';

registerDeviceRuntime(cuda.runtime);
registerBackend(cudaMathBackend);

/** The DeviceRuntime registered for 'cuda'. */
export const cudaRuntime = cuda.runtime;

/** Whether the addon loaded and a device is present; otherwise `reason` says why (what is missing and how to fix it). */
export const availability = cuda.availability;

// The runtime's functions, bound to this package's addon, by theme.
export const { allocate, allocatorApi, adoptBlock, fill, memoryStats, resetPeakMemoryStats, emptyCache } = cuda;
export const { copyDeviceToDevice, copyDeviceToHost, copyDeviceToHostAsync, copyHostToDevice, synchronize } = cuda;
export const { deviceCount, deviceProperties, driverVersion, runtimeVersion, buildInfo } = cuda;
export const { currentStream, setCurrentStream, withStream, recordStream, captureGraph } = cuda;

/** A captured CUDA graph (captureGraph's result): replay(), dispose(), result, replayCount. */
export type CudaGraph<T = unknown> = GpuGraph<T>;

/** A stream of the CUDA runtime: `new Stream({ device })`, `Stream.current(i)`. */
export const Stream = cuda.Stream;
export type Stream = GpuStream;
/** An event of the CUDA runtime: `new Event({ device, timing })`. */
export const Event = cuda.Event;
export type Event = GpuEvent;

/** Storage of a 'cuda' tensor (one class for both runtimes; its device.type tells them apart). */
export { GpuStorage as CudaStorage } from './storage.js';
export type CudaDeviceProperties = GpuDeviceProperties<'cuda'>;

/** True for storage made by this runtime (a 'cuda' tensor's), live or disposed. */
export function isCudaStorage(s: unknown): s is GpuStorage {
  return cuda.isStorage(s);
}

export type { BuildInfo } from './build-info.js';
export type { EventOptions } from './event.js';
export type { CaptureOptions } from './graph.js';
export type { MemoryStats } from './memory-stats.js';
export type { StreamOptions } from './stream.js';
export { CudaError, CudaOutOfMemoryError } from './errors.js';

export { cudaMathBackend, CUDA_MATH_PRIORITY } from './math-backend/backend.js';
export { TENSOR_DTYPE_CODE } from './tensor-dtype.js';
export {
  abiHeaderMismatches,
  abiLayout,
  headerEnumNames,
  nameIndex,
  putNums,
  rowStrides,
  type AbiArrays,
  type AbiLayout,
} from './abi.js';
export { KV_ABI, KV_NUM, KV_PTR, kvAppendArgs, type KvAppendArgs, type KvAppendOutputs } from './kv-append.js';
export { cudaMathRules } from './math-backend/rules.js';
export { CUDA_MATH_LIMITS } from './math-backend/limits.js';
export { runBackward as cudaMathBackward, runForward as cudaMathForward } from './math-backend/run.js';
export type { BackwardRun as CudaMathBackwardRun, ForwardRun as CudaMathForwardRun } from './math-backend/run.js';
