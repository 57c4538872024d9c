import { registerBackend, registerDeviceRuntime, type Backend, type DeviceRuntime } from '@attn/core';
import { describe, expect, it } from 'vitest';
import type { PackageStatus } from '../runtime/packages.js';
import { collectDoctor, cudaVersionString } from './collect.js';
import { formatDoctor } from './format.js';

// This file runs in its own process (vitest forks), so the fake runtime and backends stay here.
const fakeRocm: DeviceRuntime = {
  type: 'rocm',
  availability: () => ({ ok: true }),
  deviceCount: () => 1,
  properties: (index) => ({
    type: 'rocm',
    index,
    name: 'AMD Instinct MI300X',
    arch: 'gfx942',
    major: 0,
    minor: 0,
    multiProcessorCount: 304,
    totalMemoryBytes: 192 * 1024 ** 3,
    sharedMemoryPerBlockOptin: 64 * 1024,
    l2CacheBytes: 4 * 1024 ** 2,
  }),
  allocate: () => {
    throw new Error('not in this test');
  },
  copyHostToDevice() {},
  copyDeviceToHost() {},
  copyDeviceToDevice() {},
  fill() {},
  synchronize() {},
};

function backend(name: string, over: Partial<Backend>): Backend {
  return {
    name,
    deviceType: 'rocm',
    defaultPriority: 10,
    description: name,
    availability: () => ({ ok: true }),
    rules: [],
    forward: () => {
      throw new Error('not in this test');
    },
    ...over,
  };
}

describe('doctor', () => {
  registerDeviceRuntime(fakeRocm);
  registerBackend(backend('rocm-built', { buildInfo: () => ({ archs: ['gfx942', 'gfx90a'], flags: '-O3' }) }));
  registerBackend(
    backend('rocm-broken', {
      availability: () => ({ ok: false, reason: 'unavailable: libamdhip64.so.6 not found' }),
      buildInfo: () => {
        throw new Error('no addon');
      },
    }),
  );
  const packages: PackageStatus[] = [
    { name: '@attn/cpu', state: 'loaded', version: '0.1.0', module: {} },
    { name: '@attn/cuda', state: 'not installed' },
    {
      name: '@attn/rocm',
      state: 'loaded',
      version: '0.1.0',
      module: {
        buildInfo: () => ({ archs: ['gfx942'], compiler: 'hipcc' }),
        runtimeVersion: () => 6002,
        memoryStats: () => ({ allocatedBytes: 2048, reservedBytes: 1024 ** 2, peakReservedBytes: 2 * 1024 ** 2 }),
      },
    },
    { name: '@attn/rocm-ck', state: 'failed', error: 'SyntaxError: bad build' },
  ];
  const report = collectDoctor(packages);

  it('lists devices of registered runtimes with their properties and memory', () => {
    const rocm = report.runtimes.find((r) => r.type === 'rocm')!;
    expect(rocm.state).toBe('ok');
    expect(rocm.versions).toMatchObject({ archs: ['gfx942'], compiler: 'hipcc', runtimeVersion: '6.0' });
    expect(rocm.devices).toEqual([
      expect.objectContaining({
        name: 'AMD Instinct MI300X',
        arch: 'gfx942',
        memory: expect.objectContaining({ allocatedBytes: 2048 }),
      }),
    ]);
    expect(report.runtimes.find((r) => r.type === 'cuda')!.state).toBe('not installed');
  });

  it('reports each backend: available or why not, and how it was built', () => {
    expect(report.backends.find((b) => b.name === 'rocm-built')).toMatchObject({
      available: true,
      buildInfo: { archs: ['gfx942', 'gfx90a'] },
    });
    expect(report.backends.find((b) => b.name === 'rocm-broken')).toMatchObject({
      available: false,
      reason: expect.stringContaining('libamdhip64'),
      buildInfo: { error: 'no addon' },
    });
    expect(report.packages.find((p) => p.name === '@attn/rocm-ck')).toMatchObject({
      state: 'failed to load',
      error: 'SyntaxError: bad build',
    });
    expect(report.packages.find((p) => p.name === '@attn/flash-cuda')).toMatchObject({ state: 'not installed' });
  });

  it('prints it readably', () => {
    const text = formatDoctor(report);
    expect(text).toMatch(/rocm:0\s+AMD Instinct MI300X, gfx942, 304 SMs\/CUs, 192 GiB/);
    expect(text).toMatch(/memory: allocated 2\.00 KiB, reserved 1\.00 MiB, peakReserved 2\.00 MiB/);
    expect(text).toMatch(/rocm-built\s+rocm, priority 10, available\n\s+build: archs=gfx942;gfx90a, flags=-O3/);
    expect(text).toMatch(/rocm-broken\s+rocm, priority 10, unavailable: libamdhip64\.so\.6 not found$/m);
    expect(text).toMatch(/@attn\/cuda\s+not installed/);
  });

  it('formats CUDA version numbers', () => {
    expect(cudaVersionString(13000)).toBe('13.0');
    expect(cudaVersionString(12080)).toBe('12.8');
    expect(cudaVersionString(0)).toBe('none');
  });
});
