import { AttnInputError } from '@attn/core';
import { describe, expect, it } from 'vitest';
import {
  checkByteCount,
  checkByteValue,
  checkDeviceIndex,
  checkHostBytes,
  checkRange,
  checkUint32,
} from './validate.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AttnInputError);
    return (e as AttnInputError).code;
  }
  throw new Error('expected an AttnInputError');
}

describe('checkDeviceIndex', () => {
  it('accepts indices below the count', () => {
    expect(checkDeviceIndex(0, 1, 'CUDA')).toBe(0);
    expect(checkDeviceIndex(3, 4, 'CUDA')).toBe(3);
  });
  it('rejects negatives, fractions, non-numbers and indices past the count', () => {
    for (const bad of [-1, 0.5, NaN, '0', null])
      expect(codeOf(() => checkDeviceIndex(bad, 2, 'CUDA'))).toBe('ATTN_DEVICE');
    expect(() => checkDeviceIndex(2, 2, 'ROCm')).toThrow(
      /ROCm device 2 does not exist: 2 device\(s\) present \(use 0\.\.1\)/,
    );
    expect(() => checkDeviceIndex(0, 0, 'CUDA')).toThrow(/0 device\(s\) present\.$/);
  });
});

describe('checkByteCount', () => {
  it('takes safe non-negative integers', () => {
    expect(checkByteCount('n', 0)).toBe(0);
    expect(checkByteCount('n', 2 ** 50)).toBe(2 ** 50);
  });
  it('rejects the rest with ATTN_SIZE', () => {
    for (const bad of [-1, 1.5, 2 ** 53, Infinity, NaN, 10n, '8'])
      expect(codeOf(() => checkByteCount('n', bad))).toBe('ATTN_SIZE');
  });
});

describe('checkRange', () => {
  it('accepts ranges inside the buffer, empty ones at its end included', () => {
    expect(() => checkRange('copy', 0, 16, 16)).not.toThrow();
    expect(() => checkRange('copy', 16, 0, 16)).not.toThrow();
  });
  it('rejects ranges past the end with ATTN_OUT_OF_BOUNDS and says where', () => {
    expect(codeOf(() => checkRange('copy', 8, 9, 16))).toBe('ATTN_OUT_OF_BOUNDS');
    expect(() => checkRange('copy', 8, 9, 16)).toThrow('copy: bytes [8, 17) run past the end of a 16-byte buffer');
    expect(codeOf(() => checkRange('copy', -1, 1, 16))).toBe('ATTN_SIZE');
  });
});

describe('checkByteValue / checkHostBytes / checkUint32', () => {
  it('validates fill values', () => {
    expect(checkByteValue(0)).toBe(0);
    expect(checkByteValue(255)).toBe(255);
    for (const bad of [-1, 256, 1.5, '1']) expect(codeOf(() => checkByteValue(bad))).toBe('ATTN_BAD_VALUE');
  });
  it('takes only Uint8Array (Buffer included) as host bytes', () => {
    const u8 = new Uint8Array(4);
    expect(checkHostBytes('src', u8)).toBe(u8);
    expect(() => checkHostBytes('src', Buffer.alloc(2))).not.toThrow();
    expect(codeOf(() => checkHostBytes('src', new Float32Array(1)))).toBe('ATTN_TYPE');
    expect(() => checkHostBytes('src', [1, 2])).toThrow(/new Uint8Array\(a\.buffer, a\.byteOffset, a\.byteLength\)/);
  });
  it('validates uint32 arguments', () => {
    expect(checkUint32('x', 0xffffffff)).toBe(0xffffffff);
    for (const bad of [-1, 2 ** 32, 0.5]) expect(codeOf(() => checkUint32('x', bad))).toBe('ATTN_BAD_ARGUMENT');
  });
});
