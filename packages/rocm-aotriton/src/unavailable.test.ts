// On a machine without ROCm and AOTriton (this one, CI), importing the package registers both
// backends and explains why they cannot run; nothing throws.
import { listBackends } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { aotritonAvailability, aotritonEfficient, aotritonFlash } from './index.js';

describe('without AOTriton', () => {
  it('registers both backends for rocm on import', () => {
    const names = listBackends('rocm').map((e) => e.name);
    expect(names).toEqual(expect.arrayContaining(['aotriton-flash', 'aotriton-efficient']));
  });
  it('availability says why, and buildInfo too', () => {
    const a = aotritonAvailability();
    if (a.ok) return; // a ROCm machine with AOTriton: nothing to explain
    console.log(`aotriton here: ${a.reason}`);
    expect(a.reason).toMatch(/@attn\/rocm-aotriton|AMD GPU|hip/i);
    expect(aotritonFlash.availability()).toEqual(a);
    expect(aotritonEfficient.buildInfo?.()).toMatchObject({ library: 'AOTriton' });
  });
});
