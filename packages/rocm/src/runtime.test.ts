// The 'rocm' device runtime as this machine has it: importing the package registers it with core
// and never throws; availability() says why it cannot run. Where build:native ran with hipcc
// (Debian's hipcc is enough) the addon must load and report its HIP build and the HIP error;
// where the build was skipped, the recorded reason. The runtime's behaviour over a working addon
// is tested once, in @attn/cuda (src/runtime-factory.test.ts, with a simulated addon).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeviceError, getDeviceRuntime, philox4x32_10, tensor } from '@attn/core';
import { describe, expect, it } from 'vitest';
import * as rocm from './index.js';
import { PACKAGE_ROOT, rocm as instance } from './runtime.js';

const addonFile = join(PACKAGE_ROOT, 'build', 'Release', 'attn_rocm.node');
const skippedFile = join(PACKAGE_ROOT, 'build', 'SKIPPED');
const built = existsSync(addonFile);
const availability = rocm.availability();
const reason = availability.ok ? '' : availability.reason;
if (!availability.ok) console.log(`[@attn/rocm] availability here: ${reason}`);

function errorOf(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

describe('import', () => {
  it("registers the 'rocm' device runtime with core", () => {
    expect(getDeviceRuntime('rocm')).toBe(rocm.rocmRuntime);
    expect(rocm.rocmRuntime.type).toBe('rocm');
  });

  it('exports the runtime surface the contract names, bound to the ROCm addon', () => {
    for (const name of [
      'availability',
      'currentStream',
      'memoryStats',
      'emptyCache',
      'buildInfo',
      'deviceCount',
      'deviceProperties',
    ] as const) {
      expect(typeof rocm[name], name).toBe('function');
    }
    expect(typeof rocm.Stream).toBe('function');
    expect(typeof rocm.Event).toBe('function');
    expect(rocm.rocmAvailability()).toBe(availability);
    expect(rocm.buildInfo().package).toBe('@attn/rocm');
  });
});

describe('availability here', () => {
  it("is ok or says why, with this machine's reason", () => {
    if (availability.ok) {
      expect(rocm.deviceCount()).toBeGreaterThan(0);
      return;
    }
    if (built) {
      // Loaded and probed: HIP itself says why there is no GPU.
      expect(reason).toMatch(/^no ROCm device \(hipError\w+/);
    } else if (existsSync(skippedFile)) {
      expect(reason).toContain(`${addonFile} was not built (${readFileSync(skippedFile, 'utf8').trim()})`);
    } else {
      expect(reason).toContain(`${addonFile} was not built. Fix: no prebuilt binary is published for`);
      expect(reason).toContain('`npx @attn/native build @attn/rocm` (needs cmake and ROCm (hipcc))');
    }
  });

  it.skipIf(!built)('the hipcc-built addon loads and reports a HIP build', () => {
    const info = rocm.rocmBuildInfo();
    expect(info).toMatchObject({ package: '@attn/rocm', addonPath: addonFile, addonLoaded: true, platform: 'HIP' });
    expect((info.archs as readonly string[]).every((a) => a.startsWith('gfx'))).toBe(true);
    expect(info.runtimeVersion).toMatch(/^\d+\.\d+\.\d+$/); // HIP_VERSION's encoding, not CUDA's
    expect(info.napiVersion).toBe(8);
  });

  // The one piece of the HIP build that runs without a GPU: attn/philox.h's host path, compiled by
  // hipcc. Kernel packages' dropout depends on this header agreeing with core bit for bit.
  it.skipIf(!built)("the HIP build's attn/philox.h agrees with core's Philox4x32-10 (host path)", () => {
    const load = instance.native.state().load;
    if (!load.ok) throw new Error(`the built addon did not load: ${load.reason}`);
    const words = [
      0, 1, 0xffffffff, 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0x082efa98,
    ];
    const inputs = new Uint32Array(6 * words.length);
    words.forEach((w, i) => inputs.set([w, w ^ 0x5555, i, w >>> 3, w ^ 0xdeadbeef, i * 7919], 6 * i));
    const got = load.addon.philoxRawHost(inputs);
    for (let i = 0; i < words.length; i++) {
      const want = philox4x32_10(inputs.subarray(6 * i, 6 * i + 4), inputs.subarray(6 * i + 4, 6 * i + 6));
      expect([...got.subarray(4 * i, 4 * i + 4)], `item ${i}`).toEqual([...want]);
    }
  });
});

describe.skipIf(availability.ok)('without a usable AMD GPU', () => {
  it('counts no devices and has nothing cached to release', () => {
    expect(rocm.deviceCount()).toBe(0);
    expect(() => rocm.emptyCache()).not.toThrow();
  });

  it('refuses rocm tensors and device calls with DeviceError and the reason', () => {
    const calls: [string, () => unknown][] = [
      ['tensor', () => tensor([1, 2, 3], [3], { device: 'rocm' })],
      ['currentStream', () => rocm.currentStream(0)],
      ['allocate', () => rocm.allocate(16)],
      ['memoryStats', () => rocm.memoryStats()],
      ['new Stream', () => new rocm.Stream()],
      ['new Event', () => new rocm.Event()],
    ];
    for (const [name, call] of calls) {
      const e = errorOf(call);
      expect(e, name).toBeInstanceOf(DeviceError);
      expect(e.code, name).toBe('ATTN_DEVICE_UNAVAILABLE');
      expect(e.message, name).toContain(reason);
    }
  });
});
