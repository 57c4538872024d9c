import { describe, expect, it } from 'vitest';
import { main } from '../program.js';
import { memoryIO } from '../io.js';
import { packagesFor } from './build.js';

describe('attn build', () => {
  it('maps backends to the packages to build, runtimes first and each once', () => {
    expect(packagesFor(['flash-cuda', 'memeff-cuda'])).toEqual([
      '@attn/cuda',
      '@attn/flash-cuda',
      '@attn/cutlass-memeff',
    ]);
    expect(packagesFor(['cpu-flash'])).toEqual(['@attn/cpu']);
    expect(packagesFor(['cuda-math', 'flash-cuda'])).toEqual(['@attn/cuda', '@attn/flash-cuda']);
    expect(packagesFor(['@attn/rocm-ck'])).toEqual(['@attn/rocm-ck']);
  });

  it('refuses an unknown backend with the names it knows (exit 2)', async () => {
    const io = memoryIO();
    expect(await main(['build', '--backend', 'metal'], io)).toBe(2);
    expect(io.err()).toMatch(/Unknown backend 'metal': pick one of cpu-flash, cuda, flash-cuda/);
  });

  it('says what a failed build needs (exit 1)', async () => {
    const io = memoryIO({ PATH: '/nonexistent' });
    expect(await main(['build', '--backend', 'cpu-flash'], io)).toBe(1);
    expect(io.err()).toMatch(/@attn\/cpu: cannot build from source: cmake was not found.*\[ATTN_NATIVE_BUILD\]/);
  });
});
