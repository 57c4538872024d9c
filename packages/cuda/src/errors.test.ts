import { AttnInputError, DeviceError, OutOfMemoryError } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { callNative, CudaError, CudaOutOfMemoryError, translateNativeError } from './errors.js';

function nativeError(code: string, fields: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`native says ${code}`), { code }, fields);
}

describe('translateNativeError', () => {
  it('makes OOM a CudaOutOfMemoryError (an OutOfMemoryError) with the sizes and stats', () => {
    const stats = { allocatedBytes: 1, reservedBytes: 2 };
    const e = translateNativeError(
      nativeError('ATTN_OUT_OF_MEMORY', {
        requestedBytes: 2 ** 50,
        device: 0,
        deviceFreeBytes: 10,
        deviceTotalBytes: 20,
        stats,
      }),
    );
    expect(e).toBeInstanceOf(CudaOutOfMemoryError);
    expect(e).toBeInstanceOf(OutOfMemoryError);
    expect(e).toBeInstanceOf(DeviceError);
    const oom = e as CudaOutOfMemoryError;
    expect(oom.code).toBe('ATTN_OUT_OF_MEMORY');
    expect(oom.requestedBytes).toBe(2 ** 50);
    expect(oom.deviceTotalBytes).toBe(20);
    expect(oom.stats).toBe(stats);
    expect(oom.message).toBe('native says ATTN_OUT_OF_MEMORY');
  });

  it('makes a runtime failure a CudaError naming the CUDA error', () => {
    const e = translateNativeError(
      nativeError('ATTN_GPU_ERROR', { gpuError: 'cudaErrorIllegalAddress', gpuErrorNumber: 700 }),
    );
    expect(e).toBeInstanceOf(CudaError);
    expect(e).toBeInstanceOf(DeviceError);
    expect((e as CudaError).code).toBe('ATTN_CUDA_ERROR');
    expect((e as CudaError).gpuError).toBe('cudaErrorIllegalAddress');
    expect((e as CudaError).gpuErrorNumber).toBe(700);
  });

  it('makes bad arguments AttnInputError with stable codes', () => {
    const cases: [string, string][] = [
      ['ATTN_BAD_ARGUMENT', 'ATTN_BAD_ARGUMENT'],
      ['ATTN_DEVICE_INDEX', 'ATTN_DEVICE'],
      ['ATTN_OUT_OF_BOUNDS', 'ATTN_OUT_OF_BOUNDS'],
      ['ATTN_BAD_POINTER', 'ATTN_BAD_POINTER'],
      ['ATTN_BAD_HANDLE', 'ATTN_BAD_HANDLE'],
      ['ATTN_BAD_SIZE', 'ATTN_SIZE'],
      ['ATTN_EVENT_NOT_RECORDED', 'ATTN_EVENT_NOT_RECORDED'],
    ];
    for (const [native, code] of cases) {
      const e = translateNativeError(nativeError(native));
      expect(e, native).toBeInstanceOf(AttnInputError);
      expect((e as AttnInputError).code, native).toBe(code);
      expect((e as Error).cause, native).toBeInstanceOf(Error);
    }
  });

  it('leaves errors without a native code alone', () => {
    const plain = new TypeError('x');
    expect(translateNativeError(plain)).toBe(plain);
    expect(translateNativeError('str')).toBe('str');
    const unknown = nativeError('SOMETHING_ELSE');
    expect(translateNativeError(unknown)).toBe(unknown);
  });
});

describe('callNative', () => {
  it('returns the value or throws the translated error', () => {
    expect(callNative(() => 5)).toBe(5);
    expect(() =>
      callNative(() => {
        throw nativeError('ATTN_BAD_HANDLE');
      }),
    ).toThrow(AttnInputError);
  });
});
