// Loads a runtime addon lazily, once, and turns every way it can be missing into the reason that
// availability(), explain and `attn doctor` show. Nothing here throws at import time. One instance
// per runtime (createNativeAccess): @attn/cuda's addon and @attn/rocm's are loaded and probed apart.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Availability, DeviceError } from '@attn/core';
import { BINDING_FUNCTIONS, type NativeBinding, type NativeProbe } from './binding.js';
import type { GpuPlatform } from './platform.js';

/** Where a runtime's addon lives and what to tell the user when it is not built. */
export interface AddonLocation {
  /** The package folder (holding package.json and build/). */
  readonly packageRoot: string;
  /** The addon's file name without `.node`; it is looked for in build/Release/. */
  readonly addonName: string;
  /** What to do to get the addon, e.g. "run `pnpm --filter @attn/cuda build:native` where nvcc is installed". */
  readonly buildHint: string;
}

export type AddonLoad =
  | { readonly ok: true; readonly addon: NativeBinding; readonly path: string }
  | { readonly ok: false; readonly reason: string; readonly path: string };

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** build/Release/<addonName>.node under the package root. */
export function addonPath(location: AddonLocation): string {
  return join(location.packageRoot, 'build', 'Release', `${location.addonName}.node`);
}

/** Loads the addon; never throws. `requireFn` is injectable for tests. */
export function loadAddon(location: AddonLocation, requireFn: NodeJS.Require = createRequire(import.meta.url)): AddonLoad {
  const path = addonPath(location);
  const hint = location.buildHint;
  if (!existsSync(path)) {
    // native-build.mjs records why it skipped (no nvcc, no hipcc, no cmake); that is the precise reason.
    const skipped = join(location.packageRoot, 'build', 'SKIPPED');
    if (existsSync(skipped)) {
      const why = readFileSync(skipped, 'utf8').trim() || 'no reason recorded';
      return { ok: false, path, reason: `unavailable: native addon not built: ${why}` };
    }
    return { ok: false, path, reason: `unavailable: native addon not built (${path} is missing); ${hint}` };
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
      reason: `unavailable: native addon ${path} is from another version (missing ${missing.join(', ')}); ${hint}`,
    };
  }
  return { ok: true, path, addon: addon as NativeBinding };
}

/** Why a loaded addon sees no device, from its probe and the driver's version (0 = no driver). */
export function probeAvailability(platform: GpuPlatform, probe: NativeProbe, driverVersion: number, runtimeVersion: number): Availability {
  const noDevice = `unavailable: no ${platform.name} device`;
  if (probe.errorName !== undefined) {
    // HIP's message is often the error's name again; say it once.
    const detail = probe.error && probe.error !== probe.errorName ? `${probe.errorName}: ${probe.error}` : probe.errorName;
    return { ok: false, reason: `${noDevice} (${detail}${platform.probeHint(probe.errorName, driverVersion, runtimeVersion)})` };
  }
  if (probe.count <= 0) return { ok: false, reason: `${noDevice} (the driver reports 0 devices)` };
  return { ok: true };
}

/** What the first use found: the addon and whether a device is there. */
export interface NativeState {
  readonly load: AddonLoad;
  readonly availability: Availability;
  /** Usable devices: 0 unless available. Devices do not come and go while a process runs. */
  readonly deviceCount: number;
}

export function evaluateNative(platform: GpuPlatform, load: AddonLoad): NativeState {
  if (!load.ok) return { load, availability: { ok: false, reason: load.reason }, deviceCount: 0 };
  try {
    const { addon } = load;
    const probe = addon.probe();
    if (probe.errorName === undefined && probe.count > 0) return { load, availability: { ok: true }, deviceCount: probe.count };
    return { load, availability: probeAvailability(platform, probe, addon.driverVersion(), addon.runtimeVersion()), deviceCount: 0 };
  } catch (e) {
    return { load, availability: { ok: false, reason: `unavailable: probing ${platform.name} devices failed: ${message(e)}` }, deviceCount: 0 };
  }
}

/** One runtime's addon, loaded and probed on first use. */
export interface NativeAccess {
  readonly platform: GpuPlatform;
  /** Where the addon is looked for. */
  readonly addonPath: string;
  /** Loads and probes once per process. */
  state(): NativeState;
  /**
   * The addon, for calls that need a device. Throws DeviceError ATTN_DEVICE_UNAVAILABLE with the
   * reason when the addon is missing or there is no device.
   */
  require(): NativeBinding;
  /** The addon when it loaded, device or not (build info and versions need no device). */
  loaded(): NativeBinding | null;
  /** Tests only: run the TS layer over a simulated addon (undefined: load the real one again). */
  setStateForTesting(s: NativeState | undefined): void;
}

export function createNativeAccess(platform: GpuPlatform, location: AddonLocation): NativeAccess {
  let state: NativeState | undefined;
  const current = (): NativeState => (state ??= evaluateNative(platform, loadAddon(location)));
  return {
    platform,
    addonPath: addonPath(location),
    state: current,
    require() {
      const s = current();
      if (!s.availability.ok) {
        throw new DeviceError('ATTN_DEVICE_UNAVAILABLE', `${platform.packageName} cannot run this: ${s.availability.reason}`);
      }
      return (s.load as { addon: NativeBinding }).addon;
    },
    loaded() {
      const { load } = current();
      return load.ok ? load.addon : null;
    },
    setStateForTesting(s) {
      state = s;
    },
  };
}
