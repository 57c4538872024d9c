import { listBackends } from '@attn/core';
import { defaultFaLibraryDeps, isCkSdpaAvailable, resolveRocmFaLibrary } from '@attn/rocm';
import { describe, expect, it } from 'vitest';
import { ckAvailability } from './index.js';

describe('without ROCm and CK', () => {
  it('registers both backends and the CK probe; CK preference falls back with the reason', () => {
    expect(listBackends('rocm').map((e) => e.name)).toEqual(expect.arrayContaining(['ck-flash', 'ck-efficient']));
    expect(defaultFaLibraryDeps().probe('ck')).toBeDefined();
    const a = ckAvailability();
    if (a.ok) return;
    console.log(`ck here: ${a.reason}`);
    expect(isCkSdpaAvailable()).toBe(false);
    const choice = resolveRocmFaLibrary({ ...defaultFaLibraryDeps(), env: { ATTN_ROCM_FA_PREFER_CK: '1' } });
    expect(choice.effective).toBe('aotriton');
    expect(choice.fallback).toContain('CK is unavailable');
  });
});
