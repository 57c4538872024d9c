// The backend registry: backend packages register on import; selection reads it in priority order.
import type { Backend } from './backend.js';
import type { DeviceType } from './device.js';
import { isDeviceType } from './device-parse.js';
import { AttnInputError } from './errors.js';
import { type BackendSlot, registryState } from './registry-state.js';

export {
  getDeviceRuntime,
  listDeviceRuntimes,
  registerDeviceRuntime,
  unregisterDeviceRuntime,
} from './device-registry.js';

export interface RegisterOptions {
  /** Overrides backend.defaultPriority. Higher runs first among the backends of a device. */
  priority?: number;
}

/** One registered backend as listBackends reports it. */
export interface BackendEntry {
  readonly name: string;
  readonly deviceType: DeviceType;
  readonly priority: number;
  readonly backend: Backend;
}

/** The registered backends; registerBackend, below, is the only writer and stores Backends. */
function slots(): Map<string, BackendSlot<Backend>> {
  return registryState().backends as Map<string, BackendSlot<Backend>>;
}

const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

function checkPriority(priority: unknown, what: string): number {
  if (typeof priority !== 'number' || !Number.isFinite(priority)) {
    throw new AttnInputError('ATTN_PRIORITY', `${what} must be a finite number, got ${String(priority)}.`);
  }
  return priority;
}

function checkBackendShape(backend: Backend): void {
  const b = backend as Partial<Backend> | null;
  const fail: (why: string) => never = (why) => {
    throw new AttnInputError('ATTN_BACKEND', `registerBackend(${JSON.stringify(b?.name)}): ${why}.`);
  };
  if (typeof b !== 'object' || b === null) fail('a backend must be an object');
  if (typeof b.name !== 'string' || !NAME_PATTERN.test(b.name)) {
    fail('name must be lowercase letters, digits, ".", "_" or "-" (e.g. "cpu-math")');
  }
  if (!isDeviceType(b.deviceType)) fail("deviceType must be 'cpu', 'cuda' or 'rocm'");
  if (typeof b.defaultPriority !== 'number' || !Number.isFinite(b.defaultPriority))
    fail('defaultPriority must be a finite number');
  if (typeof b.availability !== 'function') fail('availability() is missing');
  if (typeof b.forward !== 'function') fail('forward() is missing');
  if (!Array.isArray(b.rules)) fail('rules must be an array of rules');
  for (const rule of b.rules) {
    if (typeof rule?.name !== 'string' || typeof rule.check !== 'function')
      fail('every rule needs a name and a check()');
  }
  if (b.kernels !== undefined) {
    if (!Array.isArray(b.kernels)) fail('kernels must be an array of { name, description, check? }');
    const seen = new Set<string>();
    for (const k of b.kernels) {
      if (typeof k?.name !== 'string' || !NAME_PATTERN.test(k.name))
        fail('every kernel needs a name of lowercase letters, digits, ".", "_" or "-"');
      if (seen.has(k.name)) fail(`kernel ${JSON.stringify(k.name)} is declared twice`);
      seen.add(k.name);
      if (typeof k.description !== 'string') fail(`kernel ${JSON.stringify(k.name)} needs a description`);
      if (k.check !== undefined && typeof k.check !== 'function')
        fail(`kernel ${JSON.stringify(k.name)}: check must be a function`);
    }
  }
}

/**
 * Adds a backend. The same object again is a no-op (a priority in opts still applies). Another
 * object under a registered name replaces the first with a process warning, as tfjs does: two
 * copies of one backend package in a process should not make the later one invisible, and a
 * hot-reloaded backend should win. A priority set with setBackendPriority survives the replacement.
 */
export function registerBackend(backend: Backend, opts: RegisterOptions = {}): void {
  checkBackendShape(backend);
  const explicit = opts.priority === undefined ? undefined : checkPriority(opts.priority, 'priority');
  const state = registryState();
  const prev = slots().get(backend.name);
  if (prev && prev.backend === backend) {
    if (explicit !== undefined && prev.priority !== explicit) {
      prev.priority = explicit;
      state.generation++;
    }
    return;
  }
  if (prev) {
    process.emitWarning(
      `attn: backend '${backend.name}' was registered again by another object; the new one replaces it.`,
      {
        code: 'ATTN_BACKEND_REPLACED',
      },
    );
  }
  const keepUserPriority = prev?.userPriority === true && explicit === undefined;
  slots().set(backend.name, {
    backend,
    priority: keepUserPriority ? prev.priority : (explicit ?? backend.defaultPriority),
    userPriority: keepUserPriority,
    seq: prev ? prev.seq : state.seq++,
  });
  state.generation++;
}

/** Removes a backend; returns whether it was registered. */
export function unregisterBackend(name: string): boolean {
  const state = registryState();
  const removed = state.backends.delete(name);
  if (removed) state.generation++;
  return removed;
}

/** Registered backends (of one device type, or all), highest priority first, ties by registration order. */
export function listBackends(deviceType?: DeviceType): BackendEntry[] {
  if (deviceType !== undefined && !isDeviceType(deviceType)) {
    throw new AttnInputError('ATTN_DEVICE', `listBackends: unknown device type ${JSON.stringify(deviceType)}.`);
  }
  return [...slots().values()]
    .filter((s) => deviceType === undefined || s.backend.deviceType === deviceType)
    .sort((a, b) => b.priority - a.priority || a.seq - b.seq)
    .map((s) => ({ name: s.backend.name, deviceType: s.backend.deviceType, priority: s.priority, backend: s.backend }));
}

export function getBackend(name: string): Backend | undefined {
  return slots().get(name)?.backend;
}

/** Changes a registered backend's priority; kept if its package registers it again. */
export function setBackendPriority(name: string, priority: number): void {
  const state = registryState();
  const slot = slots().get(name);
  if (!slot) throw unknownBackendError([name]);
  slot.priority = checkPriority(priority, 'priority');
  slot.userPriority = true;
  state.generation++;
}

/** The error for names that are not registered; lists the ones that are. */
export function unknownBackendError(unknown: readonly string[]): AttnInputError {
  const known = [...registryState().backends.keys()];
  return new AttnInputError(
    'ATTN_UNKNOWN_BACKEND',
    `Unknown backend ${unknown.map((n) => JSON.stringify(n)).join(', ')}: registered backends are ` +
      `${known.length ? known.join(', ') : '(none: import a backend package such as @attn/cpu)'}.`,
  );
}

/**
 * Checks a user's backend list: an array of registered names, at least one. Duplicates are
 * dropped, first occurrence kept (as PyTorch's sdpa_kernel).
 */
export function checkBackendNames(names: unknown, what: string): string[] {
  if (!Array.isArray(names) || names.some((n) => typeof n !== 'string')) {
    throw new AttnInputError('ATTN_UNKNOWN_BACKEND', `${what} must be an array of backend names, e.g. ['cpu-math'].`);
  }
  if (names.length === 0) {
    throw new AttnInputError('ATTN_UNKNOWN_BACKEND', `${what} is empty: name at least one backend, e.g. ['cpu-math'].`);
  }
  const unknown = (names as string[]).filter((n) => !registryState().backends.has(n));
  if (unknown.length > 0) throw unknownBackendError(unknown);
  return [...new Set(names as string[])];
}
