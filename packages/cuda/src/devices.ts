// deviceCount, deviceProperties, driver and runtime versions of one runtime's addon.
import type { DeviceProperties } from '@attn/core';
import { callNative } from './errors.js';
import type { NativeAccess } from './native.js';
import type { GpuType } from './platform.js';
import { checkDeviceIndex } from './validate.js';

/** Core's DeviceProperties plus what the CUDA/HIP runtime adds. */
export interface GpuDeviceProperties<T extends GpuType = GpuType> extends DeviceProperties {
  readonly type: T;
  readonly sharedMemoryPerBlock: number;
  /** 32 on NVIDIA; 64 (a wavefront) on most AMD GPUs. */
  readonly warpSize: number;
  readonly maxThreadsPerBlock: number;
  /** 'dddd:bb:dd.0' */
  readonly pciBusId: string;
}

export interface Devices<T extends GpuType = GpuType> {
  /** Devices this process can use: 0 when the addon or the driver is missing (availability() says why). */
  deviceCount(): number;
  deviceProperties(index?: number): GpuDeviceProperties<T>;
  /** The driver's version in the runtime's encoding; 0 when no driver is installed. Needs the addon, not a device. */
  driverVersion(): number;
  /** The runtime compiled into the addon, in its encoding (CUDA 13000 = 13.0; HIP 50221153 = 5.2.21153). */
  runtimeVersion(): number;
  /** `index` when it names a device of this runtime; AttnInputError ATTN_DEVICE otherwise. */
  checkIndex(index: unknown): number;
}

export function createDevices<T extends GpuType>(native: NativeAccess): Devices<T> {
  const { platform } = native;
  const deviceCount = (): number => native.state().deviceCount;
  const checkIndex = (index: unknown): number => checkDeviceIndex(index, deviceCount(), platform.name);
  // Properties do not change while a process runs; the addon call is not free (many attributes).
  const cache = new Map<number, GpuDeviceProperties<T>>();
  // A version needs the loaded addon only; without one, require() throws the reason.
  const versionAddon = () => native.loaded() ?? native.require();

  return {
    deviceCount,
    checkIndex,
    deviceProperties(index = 0) {
      const addon = native.require();
      checkIndex(index);
      let props = cache.get(index);
      if (!props) {
        const p = callNative(() => addon.deviceProperties(index));
        props = Object.freeze({ type: platform.type as T, ...p });
        cache.set(index, props);
      }
      return props;
    },
    driverVersion() {
      const addon = versionAddon();
      return callNative(() => addon.driverVersion());
    },
    runtimeVersion() {
      const addon = versionAddon();
      return callNative(() => addon.runtimeVersion());
    },
  };
}
