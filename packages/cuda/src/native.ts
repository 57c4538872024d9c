// Loads the addon lazily, once, and turns every way it can be missing into the reason that
// availability(), explain and `attn doctor` show. Nothing here throws at import time.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Availability, DeviceError } from '@attn/core';
import { BINDING_FUNCTIONS, type NativeBinding, type NativeProbe } from './binding.js';

/** The package folder: this file sits in src/ (sources) or dist/ (build), one level below it. */
export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ADDON_RELATIVE_PATH = 'build/Release/attn_cuda.node';
const BUILD_HINT = 'run `pnpm --filter @attn/cuda build:native` where the CUDA toolkit (nvcc) is installed';

export type AddonLoad =
  | { readonly ok: true; readonly addon: NativeBinding; readonly path: string }
  | { readonly ok: false; readonly reason: string; readonly path: string };

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Loads the addon under `root`; never throws. `requireFn` is injectable for tests. */
export function loadAddon(root: string = PACKAGE_ROOT, requireFn: NodeJS.Require = createRequire(import.meta.url)): AddonLoad {
  const path = join(root, ADDON_RELATIVE_PATH);
  if (!existsSync(path)) {
    const skipped = join(root, 'build', 'SKIPPED');
    if (existsSync(skipped)) {
      const why = readFileSync(skipped, 'utf8').trim() || 'no reason recorded';
      return { ok: false, path, reason: `unavailable: native addon not built: ${why}` };
    }
    return { ok: false, path, reason: `unavailable: native addon not built (${path} is missing); ${BUILD_HINT}` };
  }
  let addon: Partial<NativeBinding>;
  try {
    addon = requireFn(path) as Partial<NativeBinding>;
  } catch (e) {
    return { ok: false, path, reason: `unavailable: native addon failed to load (${path}): ${message(e)}` };
  }
  const missing = BINDING_FUNCTIONS.filter((name) => typeof addon[name] !== 'function');
  if (missing.length > 0) {
    return {
      ok: false,
      path,
      reason: `unavailable: native addon ${path} is from another version (missing ${missing.join(', ')}); ${BUILD_HINT}`,
    };
  }
  return { ok: true, path, addon: addon as NativeBinding };
}

/** 13000 -> '13.0', 12040 -> '12.4' (CUDA's version encoding: 1000 * major + 10 * minor). */
export function formatCudaVersion(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** Why a loaded addon sees no device, from its probe and the driver's version (0 = no driver). */
export function probeAvailability(probe: NativeProbe, driverVersion: number, runtimeVersion: number): Availability {
  if (probe.errorName !== undefined) {
    let hint = '';
    if (probe.errorName === 'cudaErrorInsufficientDriver') {
      hint =
        driverVersion === 0
          ? '; no NVIDIA driver is installed'
          : `; the driver supports CUDA ${formatCudaVersion(driverVersion)} but this addon's runtime is CUDA ${formatCudaVersion(runtimeVersion)}: update the driver`;
    }
    return { ok: false, reason: `unavailable: no CUDA device (${probe.errorName}: ${probe.error ?? 'no message'}${hint})` };
  }
  if (probe.count <= 0) return { ok: false, reason: 'unavailable: no CUDA device (the driver reports 0 devices)' };
  return { ok: true };
}

/** What the first use found: the addon and whether a device is there. */
export interface NativeState {
  readonly load: AddonLoad;
  readonly availability: Availability;
  /** Usable devices: 0 unless available. Devices do not come and go while a process runs. */
  readonly deviceCount: number;
}

export function evaluateNative(load: AddonLoad): NativeState {
  if (!load.ok) return { load, availability: { ok: false, reason: load.reason }, deviceCount: 0 };
  try {
    const { addon } = load;
    const probe = addon.probe();
    if (probe.errorName === undefined && probe.count > 0) return { load, availability: { ok: true }, deviceCount: probe.count };
    return { load, availability: probeAvailability(probe, addon.driverVersion(), addon.runtimeVersion()), deviceCount: 0 };
  } catch (e) {
    return { load, availability: { ok: false, reason: `unavailable: probing CUDA devices failed: ${message(e)}` }, deviceCount: 0 };
  }
}

let state: NativeState | undefined;

/** Loads and probes once per process. */
export function nativeState(): NativeState {
  state ??= evaluateNative(loadAddon());
  return state;
}

/** Tests only: run the TS layer over a simulated addon (undefined: load the real one again). */
export function setNativeStateForTesting(s: NativeState | undefined): void {
  state = s;
}

/**
 * The addon, for calls that need a device. Throws DeviceError ATTN_DEVICE_UNAVAILABLE with the
 * reason when the addon is missing or there is no device.
 */
export function requireAddon(): NativeBinding {
  const s = nativeState();
  if (!s.availability.ok) {
    throw new DeviceError('ATTN_DEVICE_UNAVAILABLE', `@attn/cuda cannot run this: ${s.availability.reason}`);
  }
  return (s.load as { addon: NativeBinding }).addon;
}

/** The addon when it loaded, device or not (build info and versions need no device). */
export function loadedAddon(): NativeBinding | null {
  const { load } = nativeState();
  return load.ok ? load.addon : null;
}
