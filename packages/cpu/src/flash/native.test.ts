// cpu-flash's addon comes through @attn/native's loader (whose own tests cover every way an addon
// can be missing); here: that this package's config finds the built addon and reports it.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cpuFlashBackend } from './backend.js';
import { PACKAGE_ROOT, addon } from './native.js';

describe('the addon', () => {
  it('is looked for from the package root', () => {
    expect(PACKAGE_ROOT).toMatch(/packages[/\\]cpu$/);
  });

  it('is available, or its reason says what was looked for and the npm command that fixes it', () => {
    const load = addon();
    if (load.ok) return;
    expect(load.reason).toMatch(/cpu-linux-x64-gnu|cpu_flash\.node/);
    expect(load.reason).toMatch(/npm install|npx @attn\/native build/);
    expect(load.reason).not.toMatch(/pnpm|^unavailable/);
  });
});

describe.skipIf(!addon().ok)('the built addon', () => {
  it('is available and says which SIMD path each dtype takes', () => {
    expect(cpuFlashBackend.availability()).toEqual({ ok: true });
    const info = cpuFlashBackend.buildInfo!();
    expect(info.native).toBe(true);
    expect(info.addonOrigin).toMatch(/prebuilt|local build/);
    expect(info.compiledIsas).toContain('portable');
    expect(String(info['forward.float32'])).toMatch(/\/fp32$/);
    expect(info.runnableIsas).toContain(info.isa);
    expect(info.kernel).toBe('auto');
  });

  // The vendor as the kernel reports it (Linux); dispatch.cpp reads the same from CPUID.
  const vendor = existsSync('/proc/cpuinfo')
    ? (/^vendor_id\s*:\s*(\S+)/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? null)
    : null;
  it.runIf(vendor !== null && process.arch === 'x64')(
    "picks the bf16 dot-product level for 'auto' on AMD CPUs with AVX512-BF16 and no AMX, not on Intel ones",
    () => {
      const info = cpuFlashBackend.buildInfo!();
      const runnable = info.runnableIsas as string[];
      const expected = runnable.includes('amx')
        ? 'amx'
        : runnable.includes('avx512bf16') && vendor === 'AuthenticAMD'
          ? 'avx512bf16'
          : (['avx512', 'avx2', 'portable'].find((l) => runnable.includes(l)) ?? 'portable');
      expect(info.isa).toBe(expected);
      if (expected === 'avx512bf16') {
        expect(info['backward.bfloat16']).toBe('avx512bf16/bf16-dpbf16');
        expect(info['forward.float32']).toBe('avx512/fp32');
      }
    },
  );

  it('says which paths a call naming a kernel takes (attn bench --kernel)', () => {
    const info = cpuFlashBackend.buildInfo!('portable');
    expect(info).toMatchObject({ kernel: 'portable', isa: 'portable' });
    expect(String(info['forward.float32'])).toMatch(/^portable\//);
    expect(String(info['backward.bfloat16'])).toMatch(/^portable\//);
    expect(() => cpuFlashBackend.buildInfo!('sm90')).toThrow(/isa must be one of/);
  });
});
