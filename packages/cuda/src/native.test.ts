import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BINDING_FUNCTIONS, type NativeBinding, type NativeProbe } from './binding.js';
import { evaluateNative, loadAddon, probeAvailability, type AddonLocation } from './native.js';
import { formatCudaVersion, formatHipVersion, gpuPlatform, hipProbeHint } from './platform.js';

const CUDA = gpuPlatform('cuda');
const ROCM = gpuPlatform('rocm');

const dirs: string[] = [];
function packageDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'attn-cuda-'));
  dirs.push(d);
  return d;
}
/**
 * A package folder shaped as @attn/cuda's: its package.json names the addon and the prebuilt package.
 * (Another name: under `pnpm exec`, NODE_PATH makes the real @attn/cuda-linux-x64-gnu resolvable anywhere.)
 */
function at(root: string): AddonLocation {
  const pkg = {
    name: '@attn-test/cuda',
    version: '0.1.0',
    attnNative: { addon: 'attn_cuda', toolchain: 'nvcc', requires: 'nvcc' },
    optionalDependencies: { '@attn-test/cuda-linux-x64-gnu': '0.1.0' },
  };
  writeFileSync(join(root, 'package.json'), JSON.stringify(pkg));
  return { packageRoot: root, platform: 'linux-x64-gnu' };
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function fakeAddon(probe: NativeProbe | (() => NativeProbe), driver = 0, runtime = 13000): NativeBinding {
  const fns = Object.fromEntries(
    BINDING_FUNCTIONS.map((name) => [
      name,
      () => {
        throw new Error(`${name} not faked`);
      },
    ]),
  );
  return {
    ...fns,
    probe: typeof probe === 'function' ? probe : () => probe,
    driverVersion: () => driver,
    runtimeVersion: () => runtime,
  } as unknown as NativeBinding;
}

describe('loadAddon', () => {
  it('reports the reason the build recorded when it skipped', () => {
    const root = packageDir();
    mkdirSync(join(root, 'build'));
    writeFileSync(
      join(root, 'build', 'SKIPPED'),
      'nvcc (the CUDA compiler) was not found; install the CUDA toolkit or set CUDACXX\n',
    );
    const load = loadAddon(at(root));
    expect(load.ok).toBe(false);
    expect(load.ok ? '' : load.reason).toContain(
      `${join(root, 'build', 'Release', 'attn_cuda.node')} was not built (nvcc (the CUDA compiler) was not found; install the CUDA toolkit or set CUDACXX)`,
    );
  });

  it('names the prebuilt package and the npm command that installs it', () => {
    const load = loadAddon(at(packageDir()));
    const reason = load.ok ? '' : load.reason;
    expect(reason).toMatch(/^no native addon: @attn-test\/cuda-linux-x64-gnu is not installed; /);
    expect(reason).toContain('`npm install @attn-test/cuda-linux-x64-gnu@0.1.0`');
    expect(reason).not.toMatch(/pnpm/);
  });

  it('refuses an addon from another version that lacks functions', () => {
    const root = packageDir();
    mkdirSync(join(root, 'build', 'Release'), { recursive: true });
    writeFileSync(join(root, 'build', 'Release', 'attn_cuda.node'), '');
    const stale = { probe() {}, allocate() {} };
    const load = loadAddon({ ...at(root), requireFn: (() => stale) as unknown as NodeJS.Require });
    const reason = load.ok ? '' : load.reason;
    expect(reason).toMatch(/attn_cuda\.node is from another version \(it lacks deviceProperties, /);
    expect(reason).not.toContain('lacks probe');
  });
});

describe('probeAvailability', () => {
  it('names a missing driver', () => {
    const a = probeAvailability(
      CUDA,
      {
        count: 0,
        platform: 'CUDA',
        errorName: 'cudaErrorInsufficientDriver',
        error: 'CUDA driver version is insufficient for CUDA runtime version',
      },
      0,
      13000,
    );
    expect(a).toEqual({
      ok: false,
      reason:
        'no CUDA device (cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version; no NVIDIA driver is installed)',
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
      "no CUDA device (cudaErrorInsufficientDriver: insufficient; the driver supports CUDA 12.4 but this addon's runtime is CUDA 13.0: update the driver)",
    );
  });

  it('reports cudaErrorNoDevice and a zero count', () => {
    expect(
      probeAvailability(
        CUDA,
        { count: 0, platform: 'CUDA', errorName: 'cudaErrorNoDevice', error: 'no CUDA-capable device is detected' },
        13000,
        13000,
      ),
    ).toEqual({
      ok: false,
      reason: 'no CUDA device (cudaErrorNoDevice: no CUDA-capable device is detected)',
    });
    expect(probeAvailability(CUDA, { count: 0, platform: 'CUDA' }, 13000, 13000)).toEqual({
      ok: false,
      reason: 'no CUDA device (the driver reports 0 devices)',
    });
  });

  it('says ROCm for the HIP build, names the error once when HIP repeats it, and adds the /dev/kfd hint', () => {
    const a = probeAvailability(
      ROCM,
      { count: 0, platform: 'HIP', errorName: 'hipErrorNoDevice', error: 'hipErrorNoDevice' },
      50221153,
      50221153,
    );
    expect(a).toEqual({ ok: false, reason: `no ROCm device (hipErrorNoDevice${hipProbeHint('hipErrorNoDevice')})` });
    expect(probeAvailability(ROCM, { count: 0, platform: 'HIP' }, 50221153, 50221153)).toEqual({
      ok: false,
      reason: 'no ROCm device (the driver reports 0 devices)',
    });
  });

  it('is available with at least one device', () => {
    expect(probeAvailability(CUDA, { count: 2, platform: 'CUDA' }, 13000, 13000)).toEqual({ ok: true });
  });
});

describe('evaluateNative', () => {
  it('passes a load failure through as the reason', () => {
    const state = evaluateNative(CUDA, { ok: false, reason: 'no native addon: why', looked: [] });
    expect(state.availability).toEqual({ ok: false, reason: 'no native addon: why' });
  });

  it('asks the loaded addon for devices', () => {
    const none = evaluateNative(CUDA, {
      ok: true,
      path: '/x',
      origin: 'local build',
      addon: fakeAddon({ count: 0, platform: 'CUDA', errorName: 'cudaErrorNoDevice', error: 'none' }),
    });
    expect(none.availability).toEqual({ ok: false, reason: 'no CUDA device (cudaErrorNoDevice: none)' });
    const one = evaluateNative(CUDA, {
      ok: true,
      path: '/x',
      origin: 'local build',
      addon: fakeAddon({ count: 1, platform: 'CUDA' }),
    });
    expect(one.availability).toEqual({ ok: true });
    expect(one.deviceCount).toBe(1);
    expect(none.deviceCount).toBe(0);
  });

  it('turns a throwing probe into a reason instead of an exception', () => {
    const state = evaluateNative(CUDA, {
      ok: true,
      path: '/x',
      origin: 'local build',
      addon: fakeAddon(() => {
        throw new Error('boom');
      }),
    });
    expect(state.availability).toEqual({ ok: false, reason: 'probing CUDA devices failed: boom' });
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
    expect(hipProbeHint('hipErrorNoDevice', () => false)).toBe(
      '; /dev/kfd is missing: the amdgpu kernel driver is not loaded here',
    );
    expect(hipProbeHint('hipErrorNoDevice', () => true)).toMatch(
      /^; \/dev\/kfd exists: check .*video and render groups.*HIP_VISIBLE_DEVICES/,
    );
    expect(hipProbeHint('hipErrorInvalidDevice', () => false)).toBe('');
  });
});
