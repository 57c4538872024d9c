// How a missing or wrong addon becomes availability()'s reason, without loading any native code.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAddon } from './native.js';

function tree(withSkipped?: string, withAddon = false): string {
  const root = mkdtempSync(join(tmpdir(), 'memeff-'));
  mkdirSync(join(root, 'build', 'Release'), { recursive: true });
  if (withSkipped !== undefined) writeFileSync(join(root, 'build', 'SKIPPED'), `${withSkipped}\n`);
  if (withAddon) writeFileSync(join(root, 'build', 'Release', 'cutlass_memeff.node'), '');
  return join(root, 'build', 'Release', 'cutlass_memeff.node');
}

describe('loadAddon', () => {
  it('says how to build when the addon is missing', () => {
    const r = loadAddon(tree());
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/not built .*build:native/);
  });

  it("repeats the build's own reason when it was skipped", () => {
    const r = loadAddon(tree('nvcc (the CUDA compiler) was not found'));
    expect(r).toEqual({ ok: false, reason: 'native addon not built: nvcc (the CUDA compiler) was not found' });
  });

  it('reports a load error and a stale addon', () => {
    const path = tree(undefined, true);
    const throwing = ((): never => {
      throw new Error('libcuda.so.1: cannot open shared object file');
    }) as unknown as NodeJS.Require;
    const r = loadAddon(path, throwing);
    expect(r.ok === false && r.reason).toMatch(/failed to load .*libcuda\.so\.1/);
    const stale = (() => ({ forward: () => '' })) as unknown as NodeJS.Require;
    const s = loadAddon(path, stale);
    expect(s.ok === false && s.reason).toMatch(/another version \(missing backwardPlan, backward, deviceSupport\)/);
  });

  it('accepts an addon with every function', () => {
    const fns = { forward: () => '', backwardPlan: () => ({}), backward: () => [], deviceSupport: () => '', kernels: [], archs: '90a' };
    const r = loadAddon(tree(undefined, true), (() => fns) as unknown as NodeJS.Require);
    expect(r.ok).toBe(true);
  });
});
