// Which device to use when none is named, and which backends a command may name or bench.
import {
  getDeviceRuntime,
  kernelCatalog,
  listBackends,
  type Backend,
  type DeviceLike,
  type DeviceType,
} from '@attn/core';
import { CliUsageError } from '../errors.js';
import { KNOWN_PACKAGES, type PackageStatus } from './packages.js';

/** The first GPU whose runtime is available and has a device; else the CPU. */
export function defaultDevice(): DeviceLike {
  for (const type of ['cuda', 'rocm'] as const) {
    const rt = getDeviceRuntime(type);
    try {
      if (rt && rt.availability().ok && rt.deviceCount() > 0) return type;
    } catch {
      // a runtime that throws here is not usable; doctor reports why
    }
  }
  return 'cpu';
}

/** Throws CliUsageError naming the registered backends when a name is not one of them. */
export function checkBackendNames(names: readonly string[], packages: readonly PackageStatus[]): void {
  const known = listBackends().map((b) => b.name);
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length === 0) return;
  const missing = packages.filter((p) => p.state !== 'loaded').map((p) => p.name);
  const hint = missing.length ? ` Packages not loaded: ${missing.join(', ')} (see \`attn doctor\`).` : '';
  throw new CliUsageError(
    `Unknown backend${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `'${n}'`).join(', ')}: registered backends are ${known.join(', ') || '(none)'}.${hint}`,
  );
}

export function isAvailable(b: Backend): boolean {
  try {
    return b.availability().ok;
  } catch {
    return false;
  }
}

const declares = (b: Backend, kernel: string): boolean => (b.kernels ?? []).some((k) => k.name === kernel);

/**
 * Backends of a device type in priority order: the named ones (checked), else every available one; with
 * --kernel, only those that declare the kernel (a name none of them declares is a usage error).
 */
export function benchBackends(
  type: DeviceType,
  names: readonly string[] | null,
  packages: readonly PackageStatus[],
  kernel: string | null = null,
): Backend[] {
  const picked = pickBackends(type, names, packages);
  if (kernel === null) return picked;
  const owners = picked.filter((b) => declares(b, kernel));
  if (owners.length === 0) {
    throw new CliUsageError(
      `No kernel named '${kernel}' among ${picked.map((b) => b.name).join(', ')}; kernels: ${kernelCatalog(listBackends(type).map((e) => e.backend))}.`,
    );
  }
  return owners;
}

function pickBackends(
  type: DeviceType,
  names: readonly string[] | null,
  packages: readonly PackageStatus[],
): Backend[] {
  const all = listBackends(type).map((e) => e.backend);
  if (names) {
    checkBackendNames(names, packages);
    const wrongDevice = names.filter((n) => !all.some((b) => b.name === n));
    if (wrongDevice.length) {
      throw new CliUsageError(
        `Backend(s) ${wrongDevice.join(', ')} do not run on '${type}': pick backends of that device, or another --device.`,
      );
    }
    return names.map((n) => all.find((b) => b.name === n)!);
  }
  const available = all.filter(isAvailable);
  if (available.length === 0) {
    const pkgs = KNOWN_PACKAGES.filter((p) => p.device === type).map((p) => p.name);
    throw new CliUsageError(
      `No backend is available on '${type}'; install and build one of ${pkgs.join(', ')} (\`attn doctor\` says why each is unavailable).`,
    );
  }
  return available;
}
