// A runtime addon's loading (through @attn/native's loader: the prebuilt platform package, then a
// local build) and device probe, done lazily and once; every way it can be missing becomes the reason
// that availability(), explain and `attn doctor` show. Nothing here throws at import time. One
// instance per runtime (createNativeAccess): @attn/cuda's addon and @attn/rocm's are loaded and probed
// apart. Reasons never start with 'unavailable:'; whoever prints one says that once.
import { type Availability, DeviceError } from '@attn/core';
import { loadNativeAddon, type NativeAddonLoad } from '@attn/native';
import { BINDING_FUNCTIONS, type NativeBinding, type NativeProbe } from './binding.js';
import type { GpuPlatform } from './platform.js';

/** Where a runtime's addon lives: its package (whose package.json names the addon). */
export interface AddonLocation {
  /** The package folder (holding package.json, npm/ in the monorepo, and build/). */
  readonly packageRoot: string;
  /** Tests: the platform tag and the require used to load (default: this machine's, Node's). */
  readonly platform?: string;
  readonly requireFn?: NodeJS.Require;
}

export type AddonLoad = NativeAddonLoad<NativeBinding>;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Loads the addon; never throws. */
export function loadAddon(location: AddonLocation): AddonLoad {
  return loadNativeAddon<NativeBinding>({ ...location, requiredFunctions: BINDING_FUNCTIONS });
}

/** Why a loaded addon sees no device, from its probe and the driver's version (0 = no driver). */
export function probeAvailability(
  platform: GpuPlatform,
  probe: NativeProbe,
  driverVersion: number,
  runtimeVersion: number,
): Availability {
  const noDevice = `no ${platform.name} device`;
  if (probe.errorName !== undefined) {
    // HIP's message is often the error's name again; say it once.
    const detail =
      probe.error && probe.error !== probe.errorName ? `${probe.errorName}: ${probe.error}` : probe.errorName;
    return {
      ok: false,
      reason: `${noDevice} (${detail}${platform.probeHint(probe.errorName, driverVersion, runtimeVersion)})`,
    };
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
    if (probe.errorName === undefined && probe.count > 0)
      return { load, availability: { ok: true }, deviceCount: probe.count };
    return {
      load,
      availability: probeAvailability(platform, probe, addon.driverVersion(), addon.runtimeVersion()),
      deviceCount: 0,
    };
  } catch (e) {
    return {
      load,
      availability: { ok: false, reason: `probing ${platform.name} devices failed: ${message(e)}` },
      deviceCount: 0,
    };
  }
}

/** One runtime's addon, loaded and probed on first use. */
export interface NativeAccess {
  readonly platform: GpuPlatform;
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
    state: current,
    require() {
      const s = current();
      if (!s.availability.ok) {
        throw new DeviceError(
          'ATTN_DEVICE_UNAVAILABLE',
          `${platform.packageName} cannot run this: ${s.availability.reason}`,
        );
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
