// The addon throws plain JS errors with a stable `code` (native/src/napi_errors.cpp). These become
// core's error classes here, so callers can rely on `instanceof` and on codes alike.
import { AttnInputError, DeviceError, GRAPH_CODES, GraphError, OutOfMemoryError } from '@attn/core';
import type { MemoryStats } from './memory-stats.js';

/**
 * A CUDA runtime call failed (or a HIP one, in @attn/rocm's build: one class for both runtimes);
 * `gpuError` is the runtime's name for it (e.g. 'cudaErrorIllegalAddress', 'hipErrorIllegalAddress').
 */
export class CudaError extends DeviceError {
  readonly gpuError: string;
  readonly gpuErrorNumber: number;
  constructor(message: string, gpuError: string, gpuErrorNumber: number, options?: { cause?: unknown }) {
    super('ATTN_CUDA_ERROR', message, options);
    this.gpuError = gpuError;
    this.gpuErrorNumber = gpuErrorNumber;
  }
}

/** Out of device memory, with the allocator's state when it happened. */
export class CudaOutOfMemoryError extends OutOfMemoryError {
  readonly device: number;
  readonly deviceFreeBytes: number;
  readonly deviceTotalBytes: number;
  readonly stats: MemoryStats;
  constructor(
    message: string,
    init: {
      requestedBytes: number;
      device: number;
      deviceFreeBytes: number;
      deviceTotalBytes: number;
      stats: MemoryStats;
    },
  ) {
    super(message, init.requestedBytes);
    this.device = init.device;
    this.deviceFreeBytes = init.deviceFreeBytes;
    this.deviceTotalBytes = init.deviceTotalBytes;
    this.stats = init.stats;
  }
}

/** Native codes that mean the caller passed something wrong, and the core code each becomes. */
const INPUT_CODES: Readonly<Record<string, string>> = {
  ATTN_BAD_ARGUMENT: 'ATTN_BAD_ARGUMENT',
  ATTN_INVALID_ARGUMENT: 'ATTN_BAD_ARGUMENT',
  ATTN_DEVICE_INDEX: 'ATTN_DEVICE',
  ATTN_DEVICE_MISMATCH: 'ATTN_DEVICE_MISMATCH',
  ATTN_OUT_OF_BOUNDS: 'ATTN_OUT_OF_BOUNDS',
  ATTN_BAD_POINTER: 'ATTN_BAD_POINTER',
  ATTN_BAD_HANDLE: 'ATTN_BAD_HANDLE',
  ATTN_OVERLAP: 'ATTN_OVERLAP',
  ATTN_BAD_VALUE: 'ATTN_BAD_VALUE',
  ATTN_BAD_SIZE: 'ATTN_SIZE',
  ATTN_EVENT_NO_TIMING: 'ATTN_EVENT_NO_TIMING',
  ATTN_EVENT_NOT_RECORDED: 'ATTN_EVENT_NOT_RECORDED',
};

interface NativeErrorFields {
  code?: unknown;
  gpuError?: unknown;
  gpuErrorNumber?: unknown;
  requestedBytes?: unknown;
  device?: unknown;
  deviceFreeBytes?: unknown;
  deviceTotalBytes?: unknown;
  stats?: unknown;
}

/** The error to throw for one the addon threw; errors without a native code pass through. */
export function translateNativeError(e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  const f = e as Error & NativeErrorFields;
  if (typeof f.code !== 'string') return e;
  const opts = { cause: e };
  switch (f.code) {
    case 'ATTN_OUT_OF_MEMORY':
      return new CudaOutOfMemoryError(e.message, {
        requestedBytes: Number(f.requestedBytes),
        device: Number(f.device),
        deviceFreeBytes: Number(f.deviceFreeBytes),
        deviceTotalBytes: Number(f.deviceTotalBytes),
        stats: f.stats as MemoryStats,
      });
    case 'ATTN_GPU_ERROR':
      return new CudaError(e.message, String(f.gpuError), Number(f.gpuErrorNumber), opts);
    case 'ATTN_HOST_OUT_OF_MEMORY':
    case 'ATTN_NATIVE_ERROR':
      return new DeviceError(f.code, e.message, opts);
  }
  if ((GRAPH_CODES as readonly string[]).includes(f.code)) return new GraphError(f.code, e.message, opts);
  const inputCode = INPUT_CODES[f.code];
  if (inputCode !== undefined) return new AttnInputError(inputCode, e.message, opts);
  return e;
}

/** Runs one addon call and rethrows its error as core's error classes. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw translateNativeError(e);
  }
}
