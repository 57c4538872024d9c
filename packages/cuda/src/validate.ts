// Checks on what callers pass to the runtime, before anything reaches native code. Each error says
// what to change; the addon re-checks the same things cheaply as a second line.
import { AttnInputError } from '@attn/core';

/** `platformName` ('CUDA', 'ROCm') says whose devices are counted. */
export function checkDeviceIndex(index: unknown, count: number, platformName: string): number {
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
    throw new AttnInputError(
      'ATTN_DEVICE',
      `A ${platformName} device index must be a non-negative integer, got ${String(index)}.`,
    );
  }
  if (index >= count) {
    throw new AttnInputError(
      'ATTN_DEVICE',
      `${platformName} device ${index} does not exist: ${count} device(s) present${count > 0 ? ` (use 0..${count - 1})` : ''}.`,
    );
  }
  return index;
}

/** A byte count or offset: a safe non-negative integer. */
export function checkByteCount(what: string, n: unknown): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new AttnInputError(
      'ATTN_SIZE',
      `${what} must be a non-negative safe integer number of bytes, got ${String(n)}.`,
    );
  }
  return n;
}

/** [offset, offset + bytes) must lie inside a buffer of `capacity` bytes. */
export function checkRange(what: string, offset: number, bytes: number, capacity: number): void {
  checkByteCount(`${what} offset`, offset);
  checkByteCount(`${what} length`, bytes);
  if (offset + bytes > capacity) {
    throw new AttnInputError(
      'ATTN_OUT_OF_BOUNDS',
      `${what}: bytes [${offset}, ${offset + bytes}) run past the end of a ${capacity}-byte buffer; pass a smaller offset or length.`,
    );
  }
}

export function checkByteValue(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 255) {
    throw new AttnInputError('ATTN_BAD_VALUE', `fill takes a byte value, an integer in 0..255, got ${String(value)}.`);
  }
  return value;
}

export function checkHostBytes(what: string, a: unknown): Uint8Array {
  if (!(a instanceof Uint8Array)) {
    throw new AttnInputError(
      'ATTN_TYPE',
      `${what} must be a Uint8Array (view other typed arrays with new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).`,
    );
  }
  return a;
}

export function checkUint32(what: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw new AttnInputError('ATTN_BAD_ARGUMENT', `${what} must be an integer in [0, 2^32), got ${String(v)}.`);
  }
  return v;
}
