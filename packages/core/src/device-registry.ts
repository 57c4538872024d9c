// Device runtimes ('cuda', 'rocm') register here when their package is imported; tensors on those
// devices are created, copied and read back through them.
import type { Device, DeviceType } from './device.js';
import { deviceToString, isDeviceType } from './device-parse.js';
import { AttnInputError, DeviceError } from './errors.js';
import { registryState } from './registry-state.js';
import type { DeviceRuntime, DeviceStorage } from './storage.js';

/** The package that provides each runtime, for error messages. */
const RUNTIME_PACKAGES: Readonly<Record<Exclude<DeviceType, 'cpu'>, string>> = {
  cuda: '@attn/cuda',
  rocm: '@attn/rocm',
};

function checkRuntimeShape(runtime: DeviceRuntime): void {
  const r = runtime as (Partial<Omit<DeviceRuntime, 'type'>> & { type?: unknown }) | null;
  if (typeof r !== 'object' || r === null || !isDeviceType(r.type) || r.type === 'cpu') {
    throw new AttnInputError('ATTN_RUNTIME', "registerDeviceRuntime: runtime.type must be 'cuda' or 'rocm'.");
  }
  const methods = [
    'availability',
    'deviceCount',
    'properties',
    'allocate',
    'copyHostToDevice',
    'copyDeviceToHost',
    'copyDeviceToDevice',
    'fill',
    'synchronize',
  ] as const;
  const missing = methods.filter((m) => typeof r[m] !== 'function');
  if (missing.length > 0) {
    throw new AttnInputError(
      'ATTN_RUNTIME',
      `registerDeviceRuntime('${r.type}'): missing methods ${missing.join(', ')}.`,
    );
  }
}

/**
 * Registers (or replaces) the runtime of a device type. Registering the same object again is a
 * no-op; another object for the same type replaces the first with a process warning, because two
 * runtimes for one device would each think they own its memory.
 */
export function registerDeviceRuntime(runtime: DeviceRuntime): void {
  checkRuntimeShape(runtime);
  const state = registryState();
  const { runtimes } = state;
  const prev = runtimes.get(runtime.type);
  if (prev === runtime) return;
  if (prev) {
    process.emitWarning(`attn: replacing the registered '${runtime.type}' device runtime with another copy.`, {
      code: 'ATTN_RUNTIME_REPLACED',
    });
  }
  runtimes.set(runtime.type, runtime);
  state.generation++;
}

/** Removes a runtime (tests, or a package that failed to initialize). Returns whether it was there. */
export function unregisterDeviceRuntime(type: DeviceType): boolean {
  const state = registryState();
  const removed = state.runtimes.delete(type as Exclude<DeviceType, 'cpu'>);
  if (removed) state.generation++;
  return removed;
}

export function getDeviceRuntime(type: DeviceType): DeviceRuntime | undefined {
  if (type === 'cpu') return undefined;
  return registryState().runtimes.get(type);
}

export function listDeviceRuntimes(): DeviceRuntime[] {
  return [...registryState().runtimes.values()];
}

/**
 * The runtime for a device, ready to use: registered, available, and the index in range.
 * Throws DeviceError (ATTN_NO_DEVICE_RUNTIME / ATTN_DEVICE_UNAVAILABLE) or AttnInputError (ATTN_DEVICE).
 */
export function requireDeviceRuntime(device: Device): DeviceRuntime {
  if (device.type === 'cpu') {
    throw new AttnInputError('ATTN_DEVICE', 'The CPU has no device runtime; this is a bug in the caller.');
  }
  const runtime = registryState().runtimes.get(device.type);
  if (!runtime) {
    const pkg = RUNTIME_PACKAGES[device.type];
    throw new DeviceError(
      'ATTN_NO_DEVICE_RUNTIME',
      `No '${device.type}' device runtime is registered: install ${pkg} and import it (import '${pkg}') before using '${deviceToString(device)}'.`,
    );
  }
  const avail = runtime.availability();
  if (!avail.ok) {
    throw new DeviceError('ATTN_DEVICE_UNAVAILABLE', `The '${device.type}' runtime is unavailable: ${avail.reason}`);
  }
  const count = runtime.deviceCount();
  if (device.index >= count) {
    throw new AttnInputError(
      'ATTN_DEVICE',
      `Device ${deviceToString(device)} does not exist: ${count} ${device.type} device(s) present (indices 0..${count - 1}).`,
    );
  }
  return runtime;
}

/**
 * True while work issued now on `device` is being captured into a graph (its runtime says so; the
 * CPU never captures). Core then skips value checks that would read device memory.
 */
export function deviceCapturing(device: Device): boolean {
  if (device.type === 'cpu') return false;
  const runtime = registryState().runtimes.get(device.type);
  return runtime?.capturing?.(device.index) === true;
}

/**
 * Reports the device storages of `tensors` (CPU ones and nulls skipped) to the capturing runtime.
 * Tensors are taken by their shape, not the Tensor type: tensor.ts loads this module.
 */
export function noteCaptureUse(
  device: Device,
  tensors: readonly ({ readonly storage: unknown } | null | undefined)[],
): void {
  if (device.type === 'cpu') return;
  const runtime = registryState().runtimes.get(device.type);
  if (!runtime?.noteCaptureUse) return;
  const storages: DeviceStorage[] = [];
  for (const t of tensors) {
    const s = t?.storage as { kind?: unknown } | undefined;
    if (s?.kind === 'device') storages.push(s as DeviceStorage);
  }
  runtime.noteCaptureUse(device.index, storages);
}
