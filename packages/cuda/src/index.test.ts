// What holds everywhere: importing registers the runtime and never throws; availability() is either
// ok or a reason (what is missing, what fixes it); without a device every device call is a typed error.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeviceError, envTestGate, getDeviceRuntime, tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import { gpu } from '../test/gpu.js';
import * as cuda from './index.js';
import { cuda as instance, PACKAGE_ROOT } from './cuda-runtime.js';

describe('import', () => {
  it("registers the 'cuda' device runtime with core", () => {
    expect(getDeviceRuntime('cuda')).toBe(cuda.cudaRuntime);
    expect(cuda.cudaRuntime.type).toBe('cuda');
  });

  it('exports the runtime surface', () => {
    for (const name of [
      'availability',
      'deviceCount',
      'deviceProperties',
      'driverVersion',
      'runtimeVersion',
      'memoryStats',
      'resetPeakMemoryStats',
      'emptyCache',
      'recordStream',
      'currentStream',
      'setCurrentStream',
      'withStream',
      'buildInfo',
    ] as const) {
      expect(typeof cuda[name], name).toBe('function');
    }
    expect(typeof cuda.Stream).toBe('function');
    expect(typeof cuda.Event).toBe('function');
  });
});

describe('availability', () => {
  it('is ok or says why, with the reason this machine has', () => {
    const a = cuda.availability();
    if (a.ok) {
      expect(cuda.deviceCount()).toBeGreaterThan(0);
      return;
    }
    const load = instance.native.state().load;
    const skipped = join(PACKAGE_ROOT, 'build', 'SKIPPED');
    if (load.ok) {
      expect(a.reason).toMatch(/^no CUDA device \(cuda\w+: .+\)$/);
    } else if (existsSync(skipped)) {
      expect(a.reason).toContain(`was not built (${readFileSync(skipped, 'utf8').trim()})`);
    } else {
      expect(a.reason).toMatch(/^no native addon: .*npm install @attn\/cuda-linux-x64-gnu/);
    }
    console.log(`[@attn/cuda] availability here: ${a.reason}`);
  });

  it('is the same answer every time (probed once)', () => {
    expect(cuda.availability()).toBe(cuda.availability());
  });
});

// On a GPU host, ATTN_REQUIRE_GPU=1 turns "no device" into a failure instead of skipped suites.
describe.runIf(envTestGate('ATTN_REQUIRE_GPU'))('ATTN_REQUIRE_GPU=1', () => {
  it('finds a usable CUDA device', () => {
    expect(cuda.availability()).toEqual({ ok: true });
    expect(gpu).toBe(true);
  });
});

describe('buildInfo', () => {
  it('describes the addon for attn doctor', () => {
    const info = cuda.buildInfo();
    expect(info.package).toBe('@attn/cuda');
    expect(typeof info.addonLoaded).toBe('boolean');
    expect(info.available).toBe(cuda.availability().ok);
    if (!info.addonLoaded) {
      expect(info.reason).toMatch(/^no native addon: /);
      return;
    }
    expect(info.platform).toBe('CUDA');
    expect(Array.isArray(info.archs) && info.archs.length).toBeGreaterThan(0);
    expect(info.compiler).toMatch(/NVIDIA/);
    expect(info.compilerVersion).toMatch(/^\d+\.\d+/);
    expect(info.runtimeVersion).toMatch(/^\d+\.\d+$/);
    expect(info.napiVersion).toBe(8);
    expect(typeof info.flags).toBe('string');
  });
});

describe.skipIf(gpu)('without a CUDA device', () => {
  const reason = cuda.availability().ok ? '' : (cuda.availability() as { reason: string }).reason;

  it('counts no devices', () => {
    expect(cuda.deviceCount()).toBe(0);
  });

  it("refuses device tensors with core's DeviceError and the reason", () => {
    let err: unknown;
    try {
      tensor([1, 2, 3], [3], { device: 'cuda' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DeviceError);
    expect((err as DeviceError).code).toBe('ATTN_DEVICE_UNAVAILABLE');
    expect((err as Error).message).toContain(reason);
  });

  it('throws DeviceError ATTN_DEVICE_UNAVAILABLE from every call that needs a device', () => {
    const calls: [string, () => unknown][] = [
      ['allocate', () => cuda.allocate(16)],
      ['memoryStats', () => cuda.memoryStats()],
      ['deviceProperties', () => cuda.deviceProperties(0)],
      ['currentStream', () => cuda.currentStream()],
      ['new Stream', () => new cuda.Stream()],
      ['new Event', () => new cuda.Event()],
      ['synchronize', () => cuda.synchronize()],
    ];
    for (const [name, call] of calls) {
      let err: unknown;
      try {
        call();
      } catch (e) {
        err = e;
      }
      expect(err, name).toBeInstanceOf(DeviceError);
      expect((err as DeviceError).code, name).toBe('ATTN_DEVICE_UNAVAILABLE');
      expect((err as Error).message, name).toContain(reason);
    }
  });

  it('has nothing cached to release', () => {
    expect(() => cuda.emptyCache()).not.toThrow();
  });
});
