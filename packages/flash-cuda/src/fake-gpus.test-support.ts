// Test support: the fake devices the rule and packing tests select on, and the registry isolation
// around each test. Property values are the real cards' (sharedMemoryPerBlockOptin from cudaGetDeviceProperties).
import { registerDeviceRuntime, type DeviceProperties } from '@attn/core';
import { isolateRegistry, makeFakeDeviceRuntime } from '@attn/core/testing';
import { afterEach, beforeEach } from 'vitest';

export const FAKE_H100: Partial<DeviceProperties> = {
  name: 'fake H100',
  arch: 'sm_90',
  major: 9,
  minor: 0,
  sharedMemoryPerBlockOptin: 232448,
};
export const FAKE_A100: Partial<DeviceProperties> = {
  name: 'fake A100',
  arch: 'sm_80',
  major: 8,
  minor: 0,
  sharedMemoryPerBlockOptin: 166912,
};
export const FAKE_T4: Partial<DeviceProperties> = {
  name: 'fake T4',
  arch: 'sm_75',
  major: 7,
  minor: 5,
  sharedMemoryPerBlockOptin: 65536,
};

/** Each test of the file sees only these devices, as cuda:0, cuda:1, ... in this order. */
export function useFakeGpus(...devices: Partial<DeviceProperties>[]): void {
  let restore: () => void;
  beforeEach(() => {
    restore = isolateRegistry({ keepDeviceRuntimes: false });
    registerDeviceRuntime(makeFakeDeviceRuntime({ devices }));
  });
  afterEach(() => restore());
}
