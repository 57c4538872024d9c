// The addon loads lazily and every way it can be missing becomes availability()'s reason.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuFlashBackend } from './backend.js';
import { addon, loadAddon, packageRoot } from './native.js';

const fakeRoot = () => mkdtempSync(join(tmpdir(), 'cpu-flash-'));

describe('loadAddon', () => {
  it('finds the package root from src/flash', () => {
    expect(packageRoot()).toMatch(/packages[/\\]cpu$/);
  });

  it('reports a missing build with the build command', () => {
    const r = loadAddon(fakeRoot());
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/not built .*build:native/);
  });

  it('reports the reason the build recorded when it skipped', () => {
    const root = fakeRoot();
    mkdirSync(join(root, 'build'));
    writeFileSync(join(root, 'build', 'SKIPPED'), 'cmake was not found\n');
    const r = loadAddon(root);
    expect(!r.ok && r.reason).toMatch(/cmake was not found/);
  });

  it('reports a file that does not load, and an addon of another version', () => {
    const root = fakeRoot();
    mkdirSync(join(root, 'build', 'Release'), { recursive: true });
    writeFileSync(join(root, 'build', 'Release', 'cpu_flash.node'), 'not a shared object');
    const broken = loadAddon(root);
    expect(!broken.ok && broken.reason).toMatch(/failed to load/);
    const stale = loadAddon(root, Object.assign(() => ({ forward() {} }), createRequire(import.meta.url)));
    expect(!stale.ok && stale.reason).toMatch(/another version \(missing forwardAsync/);
  });
});

describe.skipIf(!addon().ok)('the built addon', () => {
  it('is available and says which SIMD path each dtype takes', () => {
    expect(cpuFlashBackend.availability()).toEqual({ ok: true });
    const info = cpuFlashBackend.buildInfo!();
    expect(info.native).toBe(true);
    expect(info.compiledIsas).toContain('portable');
    expect(String(info['forward.float32'])).toMatch(/\/fp32$/);
    expect(info.runnableIsas).toContain(info.isa);
  });
});
