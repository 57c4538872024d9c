// Turning a DeviceLike into a Device, and printing and comparing devices.
import type { Device, DeviceLike, DeviceType } from './device.js';
import { AttnInputError } from './errors.js';

export const DEVICE_TYPES: readonly DeviceType[] = ['cpu', 'cuda', 'rocm'];
export const CPU: Device = Object.freeze({ type: 'cpu', index: 0 });

export function isDeviceType(s: unknown): s is DeviceType {
  return typeof s === 'string' && (DEVICE_TYPES as readonly string[]).includes(s);
}

function badDevice(like: unknown): never {
  throw new AttnInputError(
    'ATTN_DEVICE',
    `Unknown device ${JSON.stringify(like)}: use 'cpu', 'cuda', 'cuda:N', 'rocm', 'rocm:N' or { type, index }.`,
  );
}

/** 'cuda' means 'cuda:0'. The CPU has only index 0. */
export function parseDevice(like: DeviceLike): Device {
  let type: unknown;
  let index: unknown;
  if (typeof like === 'string') {
    const m = /^([a-z]+)(?::(\d+))?$/.exec(like);
    if (!m) badDevice(like);
    type = m[1];
    index = m[2] === undefined ? 0 : Number(m[2]);
  } else if (typeof like === 'object' && like !== null) {
    type = like.type;
    index = like.index;
  } else {
    badDevice(like);
  }
  if (!isDeviceType(type) || !Number.isSafeInteger(index) || (index as number) < 0) badDevice(like);
  if (type === 'cpu' && index !== 0) badDevice(like);
  return type === 'cpu' ? CPU : Object.freeze({ type, index: index as number });
}

export function deviceToString(d: Device): string {
  return d.type === 'cpu' ? 'cpu' : `${d.type}:${d.index}`;
}

export function sameDevice(a: Device, b: Device): boolean {
  return a.type === b.type && a.index === b.index;
}
