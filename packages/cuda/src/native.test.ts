import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BINDING_FUNCTIONS, type NativeBinding, type NativeProbe } from './binding.js';
import { addonPath, evaluateNative, loadAddon, probeAvailability, type AddonLocation } from './native.js';
import { formatCudaVersion, formatHipVersion, gpuPlatform, hipProbeHint } from './platform.js';

const CUDA = gpuPlatform('cuda');
const ROCM = gpuPlatform('rocm');

const dirs: string[] = [];
function packageDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'attn-cuda-'));
  dirs.push(d);
  return d;
}
function at(root: string): AddonLocation {
  return { packageRoot: root, addonName: 'attn_cuda', buildHint: 'run `pnpm --filter @attn/cuda build:native` where nvcc is installed' };
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function fakeAddon(probe: NativeProbe | (() => NativeProbe), driver = 0, runtime = 13000): NativeBinding {
  const fns = Object.fromEntries(BINDING_FUNCTIONS.map((name) => [name, () => { throw new Error(`${name} not faked`); }]));
  return {
    ...fns,
    probe: typeof probe === 'function' ? probe : () => probe,
    driverVersion: () => driver,
    runtimeVersion: () => runtime,
  } as unknown as NativeBinding;
}

describe('loadAddon', () => {
  it('reports the reason native-build.mjs recorded when the build was skipped', () => {
    const root = packageDir();
    mkdirSync(join(root, 'build'));
    writeFileSync(join(root, 'build', 'SKIPPED'), 'nvcc (the CUDA compiler) was not found; install the CUDA toolkit or set CUDACXX\n');
    const load = loadAddon(at(root));
    expect(load).toMatchObject({ ok: false });
    expect(!load.ok && load.reason).toBe(
      'unavailable: native addon not built: nvcc (the CUDA compiler) was not found; install the CUDA toolkit or set CUDACXX',
    );
  });

  it('says how to build when there is neither an addon nor a skip record', () => {
    const root = packageDir();
    const load = loadAddon(at(root));
    expect(load.ok).toBe(false);
    const reason = load.ok ? '' : load.reason;
    expect(reason).toMatch(/^unavailable: native addon not built \(/);
    expect(reason).toContain(join(root, 'build', 'Release', 'attn_cuda.node'));
    expect(reason).toContain('build:native');
  });

  it('reports a file that is not a loadable addon', () => {
    const root = packageDir();
    mkdirSync(join(root, 'build', 'Release'), { recursive: true });
    writeFileSync(addonPath(at(root)), 'not an ELF file');
    const load = loadAddon(at(root), createRequire(import.meta.url));
    expect(load.ok).toBe(false);
    expect(load.ok ? '' : load.reason).toMatch(/^unavailable: native addon failed to load \(.*attn_cuda\.node\): /);
  });

  it('refuses an addon from another version that lacks functions', () => {
    const root = packageDir();
    mkdirSync(join(root, 'build', 'Release'), { recursive: true });
    writeFileSync(addonPath(at(root)), '');
    const stale = { probe() {}, allocate() {} };
    const load = loadAddon(at(root), (() => stale) as unknown as NodeJS.Require);
    expect(load.ok).toBe(false);
    const reason = load.ok ? '' : load.reason;
    expect(reason).toMatch(/^unavailable: native addon .* is from another version \(missing deviceProperties, /);
    expect(reason).not.toContain('missing probe');
  });
});

describe('probeAvailability', () => {
  it('names a missing driver', () => {
    const a = probeAvailability(
      CUDA,
      { count: 0, platform: 'CUDA', errorName: 'cudaErrorInsufficientDriver', error: 'CUDA driver version is insufficient for CUDA runtime version' },
      0,
      13000,
    );
    expect(a).toEqual({
      ok: false,
      reason:
        'unavailable: no CUDA device (cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version; no NVIDIA driver is installed)',
    });
  });

  it('names an old driver and the runtime it would need', () => {
    const a = probeAvailability(
      CUDA,
      { count: 0, platform: 'CUDA', errorName: 'cudaErrorInsufficientDriver', error: 'insufficient' },
      12040,
      13000,
    );
    expect(a.ok).toBe(false);
    expect(a.ok ? '' : a.reason).toBe(
      "unavailable: no CUDA device (cudaErrorInsufficientDriver: insufficient; the driver supports CUDA 12.4 but this addon's runtime is CUDA 13.0: update the driver)",
    );
  });

  it('reports cudaErrorNoDevice and a zero count', () => {
    expect(probeAvailability(CUDA, { count: 0, platform: 'CUDA', errorName: 'cudaErrorNoDevice', error: 'no CUDA-capable device is detected' }, 13000, 13000)).toEqual({
      ok: false,
      reason: 'unavailable: no CUDA device (cudaErrorNoDevice: no CUDA-capable device is detected)',
    });
    expect(probeAvailability(CUDA, { count: 0, platform: 'CUDA' }, 13000, 13000)).toEqual({
      ok: false,
      reason: 'unavailable: no CUDA device (the driver reports 0 devices)',
    });
  });

  it('says ROCm for the HIP build, names the error once when HIP repeats it, and adds the /dev/kfd hint', () => {
    const a = probeAvailability(ROCM, { count: 0, platform: 'HIP', errorName: 'hipErrorNoDevice', error: 'hipErrorNoDevice' }, 50221153, 50221153);
    expect(a).toEqual({ ok: false, reason: `unavailable: no ROCm device (hipErrorNoDevice${hipProbeHint('hipErrorNoDevice')})` });
    expect(probeAvailability(ROCM, { count: 0, platform: 'HIP' }, 50221153, 50221153)).toEqual({
      ok: false,
      reason: 'unavailable: no ROCm device (the driver reports 0 devices)',
    });
  });

  it('is available with at least one device', () => {
    expect(probeAvailability(CUDA, { count: 2, platform: 'CUDA' }, 13000, 13000)).toEqual({ ok: true });
  });
});

describe('evaluateNative', () => {
  it('passes a load failure through as the reason', () => {
    const state = evaluateNative(CUDA, { ok: false, reason: 'unavailable: native addon not built: why', path: '/x' });
    expect(state.availability).toEqual({ ok: false, reason: 'unavailable: native addon not built: why' });
  });

  it('asks the loaded addon for devices', () => {
    const none = evaluateNative(CUDA, { ok: true, path: '/x', addon: fakeAddon({ count: 0, platform: 'CUDA', errorName: 'cudaErrorNoDevice', error: 'none' }) });
    expect(none.availability).toEqual({ ok: false, reason: 'unavailable: no CUDA device (cudaErrorNoDevice: none)' });
    const one = evaluateNative(CUDA, { ok: true, path: '/x', addon: fakeAddon({ count: 1, platform: 'CUDA' }) });
    expect(one.availability).toEqual({ ok: true });
    expect(one.deviceCount).toBe(1);
    expect(none.deviceCount).toBe(0);
  });

  it('turns a throwing probe into a reason instead of an exception', () => {
    const state = evaluateNative(CUDA, {
      ok: true,
      path: '/x',
      addon: fakeAddon(() => {
        throw new Error('boom');
      }),
    });
    expect(state.availability).toEqual({ ok: false, reason: 'unavailable: probing CUDA devices failed: boom' });
  });
});

describe('version encodings', () => {
  it('decodes CUDA version numbers', () => {
    expect(formatCudaVersion(13000)).toBe('13.0');
    expect(formatCudaVersion(12040)).toBe('12.4');
    expect(formatCudaVersion(11080)).toBe('11.8');
  });
  it('decodes HIP version numbers (HIP_VERSION: 10^7 major + 10^5 minor + patch)', () => {
    expect(formatHipVersion(50221153)).toBe('5.2.21153');
    expect(formatHipVersion(60241134)).toBe('6.2.41134');
    expect(ROCM.formatVersion(60000000)).toBe('6.0.0');
  });
});

describe('hipProbeHint', () => {
  it('tells a missing amdgpu driver from GPUs this process may not open', () => {
    expect(hipProbeHint('hipErrorNoDevice', () => false)).toBe('; /dev/kfd is missing: the amdgpu kernel driver is not loaded here');
    expect(hipProbeHint('hipErrorNoDevice', () => true)).toMatch(/^; \/dev\/kfd exists: check .*video and render groups.*HIP_VISIBLE_DEVICES/);
    expect(hipProbeHint('hipErrorInvalidDevice', () => false)).toBe('');
  });
});
