// createGpuRuntime over simulated addons (test/fake-addon.ts), so it runs on every machine: a 'rocm'
// runtime made by the factory works end to end through core, speaks of ROCm and @attn/rocm, keeps
// apart from a 'cuda' runtime in the same process, and explains a missing addon. Importing the
// factory registers nothing. (This file never imports ./index.js, which registers 'cuda'.)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AttnInputError,
  DeviceError,
  getDeviceRuntime,
  listDeviceRuntimes,
  registerDeviceRuntime,
  tensor,
  unregisterDeviceRuntime,
} from '@attn/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeAddon, makeFakeAddon } from '../test/fake-addon.js';
import { createGpuRuntime, type GpuRuntime } from './runtime-factory.js';

const HIP_VERSION = 50221153; // Debian's ROCm 5.2.3

function simulated<T extends 'cuda' | 'rocm'>(type: T, addon: FakeAddon): GpuRuntime<T> {
  const rt = createGpuRuntime({ type, packageRoot: '/nonexistent' });
  rt.native.setStateForTesting({
    load: { ok: true, addon, path: '(simulated)', origin: 'local build' },
    availability: { ok: true },
    deviceCount: 2,
  });
  return rt;
}

function errorOf(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

describe('importing and creating', () => {
  it('registers nothing with core', () => {
    createGpuRuntime({ type: 'rocm', packageRoot: '/nonexistent' });
    expect(listDeviceRuntimes()).toEqual([]);
  });

  it('refuses a device type it has no build for', () => {
    const make = () => createGpuRuntime({ type: 'metal' as 'cuda', packageRoot: '/x' });
    expect(errorOf(make)).toBeInstanceOf(AttnInputError);
    expect(errorOf(make).message).toMatch(/Unknown GPU runtime type "metal": use 'cuda' or 'rocm'/);
  });
});

describe('a rocm runtime over a simulated HIP addon', () => {
  let fake: FakeAddon;
  let rocm: GpuRuntime<'rocm'>;
  beforeAll(() => {
    fake = { ...makeFakeAddon(2), runtimeVersion: () => HIP_VERSION, driverVersion: () => HIP_VERSION };
    rocm = simulated('rocm', fake);
    registerDeviceRuntime(rocm.runtime);
  });
  afterAll(() => {
    unregisterDeviceRuntime('rocm');
  });

  it("registers as 'rocm' and carries core's tensors there and back", () => {
    expect(getDeviceRuntime('rocm')).toBe(rocm.runtime);
    const t = tensor([1, 2, 3, 4], [2, 2], { device: 'rocm:1' });
    expect(t.device).toEqual({ type: 'rocm', index: 1 });
    expect(t.storage).toMatchObject({ kind: 'device', device: { type: 'rocm', index: 1 } });
    expect(rocm.isStorage(t.storage)).toBe(true);
    expect([...t.transpose(0, 1).toFloat32Array()]).toEqual([1, 3, 2, 4]);
    t.dispose();
    expect(fake.blocks.size).toBe(0);
  });

  it('reports rocm devices and HIP versions', () => {
    expect(rocm.deviceCount()).toBe(2);
    expect(rocm.deviceProperties(1)).toMatchObject({ type: 'rocm', index: 1 });
    expect(rocm.runtime.properties(0).type).toBe('rocm');
    expect(rocm.buildInfo()).toMatchObject({
      package: '@attn/rocm',
      runtimeVersion: '5.2.21153',
      driverVersion: '5.2.21153',
      available: true,
    });
  });

  it('speaks of ROCm and @attn/rocm in its errors', () => {
    expect(errorOf(() => rocm.deviceProperties(2)).message).toMatch(
      /^ROCm device 2 does not exist: 2 device\(s\) present/,
    );
    const notOurs = {
      kind: 'device',
      device: { type: 'rocm', index: 0 },
      pointer: 1n,
      bytes: 8,
      disposed: false,
      dispose() {},
    } as const;
    expect(errorOf(() => rocm.fill(notOurs, 0, 1, 0)).message).toMatch(
      /made by @attn\/rocm \(tensor\(\.\.\., \{ device: 'rocm' \}\)\)/,
    );
    const s = rocm.allocate(8);
    s.dispose();
    expect(errorOf(() => s.pointer).message).toMatch(/rocm:0 storage \(8 bytes\)/);
    expect(errorOf(() => rocm.Stream.current().dispose()).message).toMatch(/wraps a stream @attn\/rocm owns/);
  });

  it('binds streams, events and the allocator controls to its addon', () => {
    const stream = new rocm.Stream({ device: 1 });
    expect(stream).toBeInstanceOf(rocm.Stream);
    expect(stream.deviceType).toBe('rocm');
    expect(rocm.withStream(stream, () => rocm.currentStream(1))).toBe(stream.handle);
    expect(rocm.Stream.current(1)).toBeInstanceOf(rocm.Stream);
    const a = new rocm.Event({ device: 1 }).record(stream);
    const b = new rocm.Event({ device: 1 }).record(stream);
    expect(a.elapsedMs(b)).toBe(0.5);
    const s = rocm.allocate(64, 1);
    rocm.recordStream(s, stream);
    expect(rocm.memoryStats(1).activeBlocks).toBe(1);
    s.dispose();
    rocm.emptyCache();
    for (const x of [a, b, stream]) x.dispose();
  });

  it("refuses a cuda runtime's storage, streams and events", () => {
    const cuda = simulated('cuda', makeFakeAddon(2));
    const cudaStorage = cuda.allocate(16);
    const cudaStream = new cuda.Stream();
    const cudaEvent = new cuda.Event().record();
    expect(cudaStream).not.toBeInstanceOf(rocm.Stream);
    expect(rocm.isStorage(cudaStorage)).toBe(false);
    const rocmStorage = rocm.allocate(16);
    expect(errorOf(() => rocm.copyDeviceToDevice(rocmStorage, 0, cudaStorage, 0, 4)).code).toBe('ATTN_DEVICE');
    expect(errorOf(() => rocm.withStream(cudaStream, () => 0)).message).toMatch(
      /must belong to the rocm runtime \(@attn\/rocm\), got a cuda one/,
    );
    expect(errorOf(() => rocm.recordStream(rocmStorage, cudaStream)).code).toBe('ATTN_DEVICE');
    expect(errorOf(() => new rocm.Event().wait(cudaStream)).code).toBe('ATTN_DEVICE');
    expect(errorOf(() => new rocm.Stream().waitEvent(cudaEvent)).code).toBe('ATTN_DEVICE');
    for (const x of [cudaStorage, rocmStorage, cudaStream, cudaEvent]) x.dispose();
  });
});

describe('a rocm runtime without its addon', () => {
  const roots: string[] = [];
  const root = () => {
    const d = mkdtempSync(join(tmpdir(), 'attn-rocm-factory-'));
    roots.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of roots) rmSync(d, { recursive: true, force: true });
  });
  /** A package folder as @attn/rocm's: no prebuilt package is published for it. */
  const rocmPackage = (dir: string) => {
    const pkg = {
      name: '@attn/rocm',
      version: '0.1.0',
      attnNative: { addon: 'attn_rocm', toolchain: 'hipcc', requires: 'cmake and ROCm (hipcc)' },
    };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
    return createGpuRuntime({ type: 'rocm', packageRoot: dir, platform: 'linux-x64-gnu' });
  };

  it('says the addon is not built, where it looked, and how to build it', () => {
    const dir = root();
    const rocm = rocmPackage(dir);
    const a = rocm.availability();
    expect(a).toEqual({
      ok: false,
      reason:
        `no native addon: @attn/rocm-linux-x64-gnu is not installed; ${join(dir, 'build', 'Release', 'attn_rocm.node')} was not built. ` +
        'Fix: no prebuilt binary is published for linux-x64-gnu; build from source with `npx @attn/native build @attn/rocm` (needs cmake and ROCm (hipcc))',
    });
    expect(rocm.deviceCount()).toBe(0);
    expect(rocm.buildInfo()).toMatchObject({
      package: '@attn/rocm',
      addonLoaded: false,
      available: false,
      reason: a.ok ? '' : a.reason,
    });
    expect(() => rocm.emptyCache()).not.toThrow();
  });

  it('reports the skip the build recorded, and every device call throws it', () => {
    const dir = root();
    mkdirSync(join(dir, 'build'));
    writeFileSync(
      join(dir, 'build', 'SKIPPED'),
      'hipcc (the ROCm compiler) was not found; install ROCm or set HIPCXX\n',
    );
    const rocm = rocmPackage(dir);
    const a = rocm.availability();
    const reason = a.ok ? '' : a.reason;
    expect(reason).toContain(
      'attn_rocm.node was not built (hipcc (the ROCm compiler) was not found; install ROCm or set HIPCXX)',
    );
    for (const call of [
      () => rocm.allocate(4),
      () => rocm.currentStream(0),
      () => new rocm.Stream(),
      () => new rocm.Event(),
      () => rocm.memoryStats(),
    ]) {
      const e = errorOf(call);
      expect(e).toBeInstanceOf(DeviceError);
      expect(e.code).toBe('ATTN_DEVICE_UNAVAILABLE');
      expect(e.message).toBe(`@attn/rocm cannot run this: ${reason}`);
    }
  });
});
