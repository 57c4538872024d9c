// The ROCm runtime addon: what can be checked without an AMD GPU.
import { existsSync, mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAddon } from './addon-loader.js';
import { PACKAGE_ROOT, probeAvailability, rocmAvailability, rocmBuildInfo } from './runtime.js';

describe('probeAvailability', () => {
  it('names the HIP error or the empty device list', () => {
    expect(probeAvailability({ count: 0, errorName: 'hipErrorNoDevice', error: 'no ROCm-capable device is detected' })).toEqual({
      ok: false,
      reason: 'no AMD GPU is usable (hipErrorNoDevice: no ROCm-capable device is detected)',
    });
    expect(probeAvailability({ count: 0 })).toMatchObject({ ok: false, reason: expect.stringMatching(/reports 0 devices/) });
    expect(probeAvailability({ count: 2 })).toEqual({ ok: true });
  });
});

describe('loadAddon', () => {
  const root = mkdtempSync(join(tmpdir(), 'attn-rocm-'));
  const spec = { packageName: '@attn/x', packageRoot: root, addonName: 'x' };

  it('reports a missing build with the command to run', () => {
    expect(loadAddon(spec)).toMatchObject({ ok: false, reason: expect.stringMatching(/not built .*pnpm --filter @attn\/x build:native/) });
  });
  it('reports the recorded reason of a skipped build', () => {
    mkdirSync(join(root, 'build'), { recursive: true });
    writeFileSync(join(root, 'build', 'SKIPPED'), 'hipcc was not found\n');
    expect(loadAddon(spec)).toMatchObject({ ok: false, reason: expect.stringMatching(/built without its native addon: hipcc was not found/) });
  });
});

// Where build:native ran with hipcc (Debian's hipcc is enough), the addon exists and must load and
// answer; where it was skipped, the reason must be the recorded one. Either way it never throws.
describe('this machine', () => {
  const built = existsSync(join(PACKAGE_ROOT, 'build', 'Release', 'attn_rocm.node'));
  const skipped = existsSync(join(PACKAGE_ROOT, 'build', 'SKIPPED'));

  it('explains why ROCm is unavailable, or runs', () => {
    const a = rocmAvailability();
    if (!a.ok) {
      console.log(`@attn/rocm here: ${a.reason}`);
      expect(a.reason.length).toBeGreaterThan(10);
    }
  });

  it.skipIf(!built || skipped)('the hipcc-built runtime addon loads and reports a HIP build', () => {
    const info = rocmBuildInfo();
    expect(info.platform).toBe('HIP');
    expect(String(info.archs)).toMatch(/gfx/);
    const a = rocmAvailability();
    if (!a.ok) expect(a.reason).toMatch(/hipError|0 devices/);
  });
});
