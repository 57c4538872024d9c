// GPU: what the runtime reports about the device, in core's DeviceProperties shape.
import { AttnInputError } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { announceSkip, gpu } from '../test/gpu.js';
import { buildInfo, cudaRuntime, deviceCount, deviceProperties, driverVersion, runtimeVersion } from './index.js';

announceSkip('device properties');

describe.skipIf(!gpu)('devices', () => {
  it('reports properties of every device', () => {
    const n = deviceCount();
    expect(n).toBeGreaterThan(0);
    for (let i = 0; i < n; i++) {
      const p = deviceProperties(i);
      console.log(`[@attn/cuda] cuda:${i}: ${JSON.stringify(p)}`);
      expect(p.type).toBe('cuda');
      expect(p.index).toBe(i);
      expect(p.name.length).toBeGreaterThan(0);
      expect(p.arch).toBe(`sm_${p.major}${p.minor}`);
      expect(p.major).toBeGreaterThanOrEqual(7);
      expect(p.multiProcessorCount).toBeGreaterThan(0);
      expect(p.totalMemoryBytes).toBeGreaterThan(2 ** 30);
      expect(p.l2CacheBytes).toBeGreaterThan(0);
      expect(p.sharedMemoryPerBlockOptin).toBeGreaterThanOrEqual(p.sharedMemoryPerBlock);
      expect(p.warpSize).toBe(32);
      expect(p.pciBusId).toMatch(/^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0$/);
      expect(cudaRuntime.properties(i)).toEqual(p);
    }
    expect(() => deviceProperties(n)).toThrow(AttnInputError);
  });

  it('reports driver and runtime versions and a build that runs on this device', () => {
    const driver = driverVersion();
    const runtime = runtimeVersion();
    expect(Math.floor(driver / 1000)).toBeGreaterThanOrEqual(Math.floor(runtime / 1000));
    const info = buildInfo();
    console.log(`[@attn/cuda] buildInfo: ${JSON.stringify(info)}`);
    const p = deviceProperties(0);
    const cc = p.major * 10 + p.minor;
    const archs = info.archs as readonly string[];
    // Some compiled arch must run here: plain sm_XY runs on XY and newer of the same major; 'a' only on XY.
    const runnable = archs.some((a) => {
      const m = /^(\d+)(a?)/.exec(a);
      if (!m) return false;
      const v = Number(m[1]);
      return m[2] === 'a' ? v === cc : v <= cc && Math.floor(v / 10) === p.major;
    });
    expect(runnable, `archs ${archs.join(',')} on sm_${cc}`).toBe(true);
  });
});
