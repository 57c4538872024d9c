// The ROCm runtime addon (build/Release/attn_rocm.node: @attn/cuda's runtime sources built with
// hipcc). What this file does is the little the ROCm backends need before @attn/cuda exposes a
// runtime factory: whether the addon loads and sees a GPU, and the current stream to launch on.
// The DeviceRuntime for 'rocm' (allocation, copies) is to come from that factory, not from a copy of
// @attn/cuda's code; until then no 'rocm' device runtime is registered (see README.md).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeviceError, type Availability } from '@attn/core';
import { lazyAddon } from './addon-loader.js';

/** The part of the runtime addon's exports used here (same binding as @attn/cuda's). */
export interface RocmRuntimeAddon {
  probe(): { readonly count: number; readonly errorName?: string; readonly error?: string };
  currentStream(device: number): bigint;
  buildInfo(): Record<string, string | number>;
}

const REQUIRED = ['probe', 'currentStream', 'buildInfo'] as const;

export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export const loadRuntimeAddon = lazyAddon<RocmRuntimeAddon>({
  packageName: '@attn/rocm',
  packageRoot: PACKAGE_ROOT,
  addonName: 'attn_rocm',
  validate: (m) => {
    const missing = REQUIRED.filter((k) => typeof (m as Record<string, unknown>)[k] !== 'function');
    return missing.length === 0 ? null : `it lacks ${missing.join(', ')} (built from another version of @attn/cuda's sources)`;
  },
});

/** Why ROCm cannot run here, from the addon's probe (hipGetDeviceCount). */
export function probeAvailability(probe: ReturnType<RocmRuntimeAddon['probe']>): Availability {
  if (probe.errorName !== undefined) {
    return { ok: false, reason: `no AMD GPU is usable (${probe.errorName}: ${probe.error ?? 'no message'})` };
  }
  if (probe.count <= 0) return { ok: false, reason: 'no AMD GPU is visible (the HIP runtime reports 0 devices)' };
  return { ok: true };
}

let probed: Availability | undefined;

/** The ROCm runtime's availability: the addon loads and HIP sees at least one GPU. Never throws. */
export function rocmAvailability(): Availability {
  if (probed) return probed;
  const load = loadRuntimeAddon();
  if (!load.ok) return (probed = { ok: false, reason: load.reason });
  try {
    return (probed = probeAvailability(load.addon.probe()));
  } catch (e) {
    return (probed = { ok: false, reason: `the HIP runtime probe failed: ${e instanceof Error ? e.message : String(e)}` });
  }
}

/** The hipStream_t (as an integer) that kernels for device `index` launch on. */
export function currentStream(index: number): bigint {
  const a = rocmAvailability();
  const load = loadRuntimeAddon();
  if (!a.ok || !load.ok) throw new DeviceError('ATTN_DEVICE_UNAVAILABLE', `ROCm is unavailable: ${a.ok ? 'the addon did not load' : a.reason}`);
  return load.addon.currentStream(index);
}

/** How the runtime addon was built (platform, archs, compiler), or why there is none. */
export function rocmBuildInfo(): Record<string, string | number> {
  const load = loadRuntimeAddon();
  return load.ok ? load.addon.buildInfo() : { unavailable: load.reason };
}
