// deviceCount, deviceProperties, driver and runtime versions.
import type { DeviceProperties } from '@attn/core';
import { callNative } from './errors.js';
import { loadedAddon, nativeState, requireAddon } from './native.js';
import { checkDeviceIndex } from './validate.js';

/** Core's DeviceProperties plus what CUDA adds. */
export interface CudaDeviceProperties extends DeviceProperties {
  readonly type: 'cuda';
  readonly sharedMemoryPerBlock: number;
  readonly warpSize: number;
  readonly maxThreadsPerBlock: number;
  /** 'dddd:bb:dd.0' */
  readonly pciBusId: string;
}

/** Devices this process can use: 0 when the addon or the driver is missing (availability() says why). */
export function deviceCount(): number {
  return nativeState().deviceCount;
}

const propertiesCache = new Map<number, CudaDeviceProperties>();

export function deviceProperties(index = 0): CudaDeviceProperties {
  const addon = requireAddon();
  checkDeviceIndex(index, deviceCount());
  let props = propertiesCache.get(index);
  if (!props) {
    const p = callNative(() => addon.deviceProperties(index));
    props = Object.freeze({ type: 'cuda' as const, ...p });
    propertiesCache.set(index, props);
  }
  return props;
}

/** The driver's CUDA version (13000 = 13.0); 0 when no driver is installed. Needs the addon, not a device. */
export function driverVersion(): number {
  const addon = loadedAddon() ?? requireAddon();
  return callNative(() => addon.driverVersion());
}

/** The CUDA runtime linked into the addon (13000 = 13.0). */
export function runtimeVersion(): number {
  const addon = loadedAddon() ?? requireAddon();
  return callNative(() => addon.runtimeVersion());
}
