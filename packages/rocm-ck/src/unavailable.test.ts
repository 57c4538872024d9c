import { listBackends } from '@attn/core';
import {
  defaultFaLibraryDeps,
  isCkSdpaAvailable,
  preferredRocmFaLibrary,
  resolveRocmFaLibrary,
  RocmFaLibraryError,
} from '@attn/rocm';
import { describe, expect, it } from 'vitest';
import { ckAvailability } from './index.js';

describe('without ROCm and CK', () => {
  it('registers both backends and the CK probe; preferring CK is refused with the reason', () => {
    expect(listBackends('rocm').map((e) => e.name)).toEqual(expect.arrayContaining(['ck-flash', 'ck-efficient']));
    expect(defaultFaLibraryDeps().probe('ck')).toBeDefined();
    const a = ckAvailability();
    if (a.ok) return;
    console.log(`ck here: ${a.reason}`);
    expect(isCkSdpaAvailable()).toBe(false);
    expect(() => preferredRocmFaLibrary('ck')).toThrow(RocmFaLibraryError);
    expect(() => preferredRocmFaLibrary('ck')).toThrow(/Cannot prefer CK.*CK is unavailable/);
    expect(resolveRocmFaLibrary()).toMatchObject({ requested: 'default', effective: 'aotriton' });
  });
});
